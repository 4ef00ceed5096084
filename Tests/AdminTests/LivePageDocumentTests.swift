import Testing
@testable import Admin

/// The live page as the admin listener sends it, without a browser: the document read from
/// Resources/live-page.html, with the snapshot in its one data element, where no value can end it.
@Suite struct LivePageDocumentTests {
    @Test func theSnapshotIsEmbeddedOnceAndCannotEndItsScriptElement() {
        let hostile = #"{"recent":[{"host":"</script><script>alert(1)</script>"}]}"#
        let page = LivePage.html(snapshot: hostile)
        #expect(page.hasPrefix("<!DOCTYPE html>\n<html lang=\"en\">"))
        #expect(page.hasSuffix("</body>\n</html>"))
        #expect(!page.contains("@SNAPSHOT@"))
        let opening = #"<script id="snapshot" type="application/json">"#
        #expect(page.ranges(of: opening).count == 1)
        let escaped = #"{"recent":[{"host":"<\/script><script>alert(1)<\/script>"}]}"#
        #expect(page.contains(opening + escaped + "</script>"))
        #expect(!page.contains("alert(1)</script>"))
    }

    /// Everything the page needs is inline, as its Content-Security-Policy requires.
    @Test func thePageLoadsNothingFromElsewhere() {
        let page = LivePage.html(snapshot: "{}")
        #expect(!page.contains("<link"))
        #expect(!page.contains(" src="))
        #expect(LivePage.headers.contains { $0.0 == "Content-Security-Policy" && $0.1.hasPrefix("default-src 'none'") })
    }
}
