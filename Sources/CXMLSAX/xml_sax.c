#include "xml_sax.h"

#include <libxml/SAX2.h>
#include <libxml/parser.h>
#include <stdlib.h>
#include <string.h>

struct hn_xml_parser {
    xmlParserCtxtPtr context;
    hn_xml_callbacks callbacks;
};

static void on_start(void *user, const xmlChar *localname, const xmlChar *prefix, const xmlChar *uri,
                     int namespace_count, const xmlChar **namespaces, int count, int defaulted,
                     const xmlChar **attributes) {
    (void)prefix; (void)uri; (void)namespace_count; (void)namespaces; (void)defaulted;
    struct hn_xml_parser *parser = user;
    if (!parser->callbacks.start || !localname) return;
    enum { STACK = 16 };
    const char *names_stack[STACK], *values_stack[STACK];
    int lengths_stack[STACK];
    const char **names = names_stack, **values = values_stack;
    int *lengths = lengths_stack;
    if (count > STACK) {
        names = malloc(sizeof(char *) * (size_t)count);
        values = malloc(sizeof(char *) * (size_t)count);
        lengths = malloc(sizeof(int) * (size_t)count);
        if (!names || !values || !lengths) {
            free(names); free(values); free(lengths);
            xmlStopParser(parser->context);
            return;
        }
    }
    int kept = 0;
    for (int index = 0; index < count; index++) {
        const xmlChar *name = attributes[index * 5], *start = attributes[index * 5 + 3], *end = attributes[index * 5 + 4];
        if (!name || !start || !end || end < start) continue;
        names[kept] = (const char *)name;
        values[kept] = (const char *)start;
        lengths[kept] = (int)(end - start);
        kept++;
    }
    parser->callbacks.start(parser->callbacks.user, (const char *)localname, kept, names, values, lengths,
                            xmlSAX2GetLineNumber(parser->context));
    if (names != names_stack) { free(names); free(values); free(lengths); }
}

static void on_end(void *user, const xmlChar *localname, const xmlChar *prefix, const xmlChar *uri) {
    (void)prefix; (void)uri;
    struct hn_xml_parser *parser = user;
    if (parser->callbacks.end && localname) {
        parser->callbacks.end(parser->callbacks.user, (const char *)localname, xmlSAX2GetLineNumber(parser->context));
    }
}

static void on_characters(void *user, const xmlChar *bytes, int count) {
    struct hn_xml_parser *parser = user;
    if (parser->callbacks.characters && bytes && count > 0) {
        parser->callbacks.characters(parser->callbacks.user, (const char *)bytes, count);
    }
}

hn_xml_parser *hn_xml_create(const hn_xml_callbacks *callbacks) {
    struct hn_xml_parser *parser = calloc(1, sizeof(*parser));
    if (!parser) return NULL;
    parser->callbacks = *callbacks;
    xmlSAXHandler handler;
    memset(&handler, 0, sizeof(handler));
    handler.initialized = XML_SAX2_MAGIC;
    handler.startElementNs = on_start;
    handler.endElementNs = on_end;
    handler.characters = on_characters;
    parser->context = xmlCreatePushParserCtxt(&handler, parser, NULL, 0, NULL);
    if (!parser->context) {
        free(parser);
        return NULL;
    }
    xmlCtxtUseOptions(parser->context, XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    return parser;
}

int hn_xml_feed(hn_xml_parser *parser, const char *bytes, int count, int terminate) {
    int code = xmlParseChunk(parser->context, bytes, count, terminate);
    if (code != 0 || !parser->context->wellFormed) return code != 0 ? code : -1;
    return 0;
}

const char *hn_xml_error(hn_xml_parser *parser) {
    xmlErrorPtr error = xmlCtxtGetLastError(parser->context);
    return error ? error->message : NULL;
}

long hn_xml_line(hn_xml_parser *parser) { return xmlSAX2GetLineNumber(parser->context); }

void hn_xml_free(hn_xml_parser *parser) {
    if (!parser) return;
    xmlFreeParserCtxt(parser->context);
    free(parser);
}
