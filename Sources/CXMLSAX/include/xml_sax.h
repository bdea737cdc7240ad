#ifndef HN_XML_SAX_H
#define HN_XML_SAX_H
// A small streaming XML reader over libxml2's SAX2 parser. The header names no libxml2 type, so that Swift code
// importing it does not import libxml2's headers (whose ICU declarations clash with Foundation's).

/// What the parser calls: an element's start (local name, attributes as local names and values with their byte
/// lengths, line), its end, and character data. `user` is handed back unchanged.
typedef struct {
    void *user;
    void (*start)(void *user, const char *name, int count, const char *const *names, const char *const *values,
                  const int *lengths, long line);
    void (*end)(void *user, const char *name, long line);
    void (*characters)(void *user, const char *bytes, int count);
} hn_xml_callbacks;

typedef struct hn_xml_parser hn_xml_parser;

/// A parser with no network access, no entity expansion and no printed errors; NULL when out of memory.
hn_xml_parser *hn_xml_create(const hn_xml_callbacks *callbacks);
/// Feeds bytes (`terminate` 1 after the last); returns 0 while the document is well-formed so far.
int hn_xml_feed(hn_xml_parser *parser, const char *bytes, int count, int terminate);
/// The last error's message, or NULL.
const char *hn_xml_error(hn_xml_parser *parser);
/// The current line [1-based].
long hn_xml_line(hn_xml_parser *parser);
void hn_xml_free(hn_xml_parser *parser);

#endif
