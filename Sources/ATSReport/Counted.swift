/// "1 destination", "3 destinations": a count with its noun, for the report's sentences.
func counted(_ count: Int, _ singular: String, plural: String? = nil) -> String {
    "\(count) \(count == 1 ? singular : plural ?? singular + "s")"
}
