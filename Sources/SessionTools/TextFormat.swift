import SystemIO

/// Text made safe inside XML and HTML, in element text and in double-quoted attributes.
package func xmlEscaped(_ text: String) -> String {
    text.replacing("&", with: "&amp;").replacing("<", with: "&lt;").replacing(">", with: "&gt;")
        .replacing("\"", with: "&quot;")
}

/// A number with `digits` decimals for people to read; "–" for one that is not finite.
package func decimal(_ value: Double, _ digits: Int) -> String {
    value.isFinite ? String(cFormat: "%.*f", Int32(digits), value) : "–"
}
