/// The shell every HTML page Liftoff writes shares: one self-contained document with its
/// stylesheet, and its script when it has one, embedded from `Assets/`.
///
/// The page loads nothing from the network: its Content-Security-Policy allows inline styles,
/// `data:` images and, only when the page has a script, inline scripts. The title is escaped
/// here; the body is markup the caller has already escaped.
struct HTMLPage {
    /// The document title (one line; escaped here).
    var title: String
    /// The stylesheet, embedded in `<style>`.
    var style: String
    /// The markup of `<body>`, escaped by the caller.
    var body: String
    /// JSON the script reads, embedded in `<script type="application/json" id="liftoff-data">`;
    /// it must be HTML-safe (no `<`, `>` or `&`), as ``JSONWriter`` writes with `htmlSafe`.
    var data: String?
    /// The script, embedded last in `<body>`; nil for a page without one.
    var script: String?

    /// The whole document.
    func render() -> String {
        var page = ""
        page.reserveCapacity(
            body.utf8.count + style.utf8.count + (data?.utf8.count ?? 0) + (script?.utf8.count ?? 0) + 1024)
        page += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
        page += "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        page += script == nil ? "img-src data:\">\n" : "script-src 'unsafe-inline'; img-src data:\">\n"
        page += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        page += "<title>\(Markup.escape(Markup.singleLine(title)))</title>\n"
        page += "<style>\(style)</style></head>\n<body>"
        page += body
        if let data {
            page += "<script type=\"application/json\" id=\"liftoff-data\">"
            page += data
            page += "</script>\n"
        }
        if let script { page += "<script>\(script)</script>\n" }
        page += "</body></html>\n"
        return page
    }
}
