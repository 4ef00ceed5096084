extension Report {
    public var html: String { "" }
}
