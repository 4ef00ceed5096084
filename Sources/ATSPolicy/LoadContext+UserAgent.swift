extension LoadContext {
    /// Which API a request came through, from its User-Agent: AVFoundation sends `AppleCoreMedia/`;
    /// WKWebView sends a WebKit UA without Safari's `Safari/` token; everything else is the app.
    /// The proxy decides with it, and `atsgate report` reads it back from the log's `user_agent`.
    public static func infer(userAgent: String?) -> LoadContext {
        guard let userAgent else { return .app }
        if userAgent.contains("AppleCoreMedia/") { return .media }
        if userAgent.contains("AppleWebKit/"), !userAgent.contains("Safari/") { return .web }
        return .app
    }
}
