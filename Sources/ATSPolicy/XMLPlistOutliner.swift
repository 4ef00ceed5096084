/// Reads an XML property list's structure with the grammar of Foundation's XML plist reader (the one
/// `PropertyListDecoder` uses), keeping where each key and value is written, and throws at the byte where
/// that reader would give up, saying what was expected there.
///
/// The grammar followed, including the reader's quirks, so that both accept and refuse the same documents:
/// white space, `<?...?>`, `<!--...-->` and one `<!DOCTYPE ...>` (no internal subset) before the root
/// element; anything after it is ignored. Element names are exact and end at white space, `/` or `>`;
/// attributes are skipped; a tag is empty when `/` comes right before its `>` (`<true/ >` is not empty).
/// `<key>` and `<string>` text takes the five predefined entities, `&#N;`/`&#xH;` (at most eight
/// characters) and CDATA sections; `<integer>`, `<real>`, `<date>` and `<data>` take raw text, checked
/// when decoded. A dictionary is `<key>` then value, repeated; comments and processing instructions may
/// stand between any two elements.
struct XMLPlistOutliner {
    private let bytes: [UInt8]
    private var index = 0
    /// Where the last dictionary key read starts, for "a key without its value".
    private var lastKeyStart = 0

    init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The elements of a plist, by their names as written.
    private enum Tag: String, CaseIterable {
        case plist, array, dict, key, string, data, date, real, integer, `true`, `false`

        var name: [UInt8] { Array(rawValue.utf8) }
    }

    /// An element opened and not yet closed, for messages about it.
    private struct OpenElement {
        var tag: Tag
        var start: Int
        /// A `<plist>` that already holds its value.
        var hasValue = false
    }

    mutating func read(into builder: inout PlistOutline.Builder) throws(PlistSyntaxError) {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
            index = 3
        } else {
            try checkEncodingDeclaration()
        }
        try skipProlog()
        var open: [OpenElement] = []
        try readElement(into: &builder, open: &open)
        while let element = open.last {
            switch element.tag {
            case .dict:
                guard try nextMarkup(in: element) else {
                    try closeTag(element)
                    open.removeLast()
                    builder.close(at: index)
                    continue
                }
                try readKey(into: &builder, dictionary: element)
                guard try nextMarkup(in: element) else {
                    throw PlistSyntaxError(offset: index, problem: "expected a value for the key on line "
                        + "\(lineNumber(at: lastKeyStart)), found \(found(at: index)): a key without its value")
                }
                try readElement(into: &builder, open: &open)
            case .array:
                guard try nextMarkup(in: element) else {
                    try closeTag(element)
                    open.removeLast()
                    builder.close(at: index)
                    continue
                }
                try readElement(into: &builder, open: &open)
            case .plist:
                let hasMarkup = try nextMarkup(in: element)
                if !element.hasValue {
                    guard hasMarkup else {
                        throw PlistSyntaxError(offset: index, problem: "expected a value inside <plist>, found "
                            + found(at: index))
                    }
                    open[open.count - 1].hasValue = true
                    try readElement(into: &builder, open: &open)
                } else {
                    guard !hasMarkup else {
                        throw PlistSyntaxError(offset: index, problem: "expected </plist>, found a second value "
                            + "\(found(at: index)) (a plist holds one value)")
                    }
                    try closeTag(element)
                    open.removeLast()
                }
            default:
                preconditionFailure("only containers stay open")
            }
        }
    }

    // MARK: Before the root element

    /// Foundation reads `encoding=` from an XML declaration at the very start of the file (none is looked
    /// for after a byte order mark or leading white space) and, on Linux, accepts only UTF-8.
    private func checkEncodingDeclaration() throws(PlistSyntaxError) {
        guard matches("<?xml", at: 0) else { return }
        var offset = 5
        while offset < bytes.count {
            if bytes[offset] == UInt8(ascii: "?") || bytes[offset] == UInt8(ascii: ">") { return }
            guard bytes.count - offset > 9 else {
                throw PlistSyntaxError(offset: offset, problem: "the file ends inside the XML declaration; expected '?>'")
            }
            if matches("encoding=", at: offset) { break }
            offset += 1
        }
        offset += 9
        guard offset < bytes.count, bytes[offset] == UInt8(ascii: "\"") || bytes[offset] == UInt8(ascii: "'") else { return }
        let quote = bytes[offset]
        var end = offset + 1
        while end < bytes.count, bytes[end] != quote { end += 1 }
        let name = bytes[(offset + 1)..<end]
        guard name.count == 5, String(decoding: name, as: UTF8.self).lowercased() == "utf-8" else {
            throw PlistSyntaxError(offset: offset + 1, problem: "the encoding '\(SyntaxQuote.quoted(name))' is not"
                + " supported; expected UTF-8")
        }
    }

    private mutating func skipProlog() throws(PlistSyntaxError) {
        while true {
            skipWhitespace()
            guard index < bytes.count else {
                throw PlistSyntaxError(offset: index, problem: "expected a <plist> element, found the end of the file")
            }
            guard bytes[index] == UInt8(ascii: "<") else {
                throw PlistSyntaxError(offset: index, problem: "expected '<' to start an element, found \(found(at: index))")
            }
            let start = index
            guard index + 1 < bytes.count else {
                throw PlistSyntaxError(offset: index, problem: "expected an element after '<', found the end of the file")
            }
            switch bytes[index + 1] {
            case UInt8(ascii: "?"):
                index += 2
                try skipProcessingInstruction(from: start)
            case UInt8(ascii: "!"):
                if matches("<!--", at: index) {
                    index += 4
                    try skipComment(from: start)
                } else {
                    try skipDoctype(from: start)
                }
            default:
                return
            }
        }
    }

    private mutating func skipDoctype(from start: Int) throws(PlistSyntaxError) {
        guard matches("<!DOCTYPE", at: start) else {
            throw PlistSyntaxError(offset: start, problem: "expected <!DOCTYPE or <!--, found \(found(at: start))")
        }
        index = start + 9
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            if byte == UInt8(ascii: "[") {
                throw PlistSyntaxError(offset: index - 1, problem: "expected '>' to end <!DOCTYPE, found '[': an internal"
                    + " DTD subset, which property lists cannot have (so no entity can be defined)")
            }
            if byte == UInt8(ascii: ">") { return }
        }
        throw PlistSyntaxError(offset: start, problem: "this <!DOCTYPE never ends; expected '>'")
    }

    /// `index` is just past `<?` (before the root) or at the `?` (inside a container), as in Foundation.
    private mutating func skipProcessingInstruction(from start: Int) throws(PlistSyntaxError) {
        // Foundation's search stops two bytes short of the end, so a `?>` ending the file is not seen.
        while index < bytes.count - 2 {
            if bytes[index] == UInt8(ascii: "?"), bytes[index + 1] == UInt8(ascii: ">") {
                index += 2
                return
            }
            index += 1
        }
        throw PlistSyntaxError(offset: start, problem: "this processing instruction never ends; expected '?>'")
    }

    /// `index` is just past `<!--`.
    private mutating func skipComment(from start: Int) throws(PlistSyntaxError) {
        while index + 3 <= bytes.count {
            if matches("-->", at: index) {
                index += 3
                return
            }
            index += 1
        }
        throw PlistSyntaxError(offset: start, problem: "this comment never ends; expected '-->'")
    }

    // MARK: Inside containers

    /// Skips white space, comments and processing instructions up to the next `<`. True at a start tag
    /// (`index` at its `<`), false at a close tag (`index` at its `<`).
    private mutating func nextMarkup(in element: OpenElement) throws(PlistSyntaxError) -> Bool {
        while true {
            skipWhitespace()
            guard index < bytes.count else { throw endInside(element) }
            guard bytes[index] == UInt8(ascii: "<") else {
                throw PlistSyntaxError(offset: index, problem: "expected \(expectation(in: element)),"
                    + " found \(found(at: index))")
            }
            let start = index
            guard index + 1 < bytes.count else { throw endInside(element) }
            switch bytes[index + 1] {
            case UInt8(ascii: "?"):
                index += 1
                try skipProcessingInstruction(from: start)
            case UInt8(ascii: "!"):
                guard matches("<!--", at: index) else {
                    throw PlistSyntaxError(offset: index, problem: "expected <!-- to start a comment, found \(found(at: index))"
                        + (matches("<![CDATA[", at: index) ? " (CDATA belongs inside <string> or <key>)" : ""))
                }
                index += 4
                try skipComment(from: start)
            case UInt8(ascii: "/"):
                return false
            default:
                return true
            }
        }
    }

    /// What may come next inside `element`, for messages.
    private func expectation(in element: OpenElement) -> String {
        switch element.tag {
        case .dict: "<key> or </dict>"
        case .plist: element.hasValue ? "</plist>" : "a value"
        default: "a value or </\(element.tag.rawValue)>"
        }
    }

    private func endInside(_ element: OpenElement) -> PlistSyntaxError {
        PlistSyntaxError(offset: bytes.count, problem: "the file ends inside <\(element.tag.rawValue)> (opened at "
            + "\(opened(element))); expected </\(element.tag.rawValue)>")
    }

    private func opened(_ element: OpenElement) -> String { "line \(lineNumber(at: element.start))" }

    /// Counted only when a message needs it.
    private func lineNumber(at offset: Int) -> Int {
        1 + bytes[..<min(offset, bytes.count)].reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) }
    }

    // MARK: Elements

    /// A start tag: the element it opens, where its `<` is, and whether it is empty (`<dict/>`).
    private mutating func startTag() throws(PlistSyntaxError) -> (tag: Tag, start: Int, isEmpty: Bool) {
        let start = index
        let nameStart = index + 1
        guard nameStart < bytes.count else {
            throw PlistSyntaxError(offset: start, problem: "expected an element name after '<', found the end of the file")
        }
        if [0x20, 0x09, 0x0A, 0x0D, UInt8(ascii: ">")].contains(bytes[nameStart]) {
            throw PlistSyntaxError(offset: start, problem: "expected an element name right after '<', found \(found(at: start))")
        }
        guard let tag = Tag.allCases.first(where: { nameEnds($0.name, at: nameStart) }) else {
            throw PlistSyntaxError(offset: start, problem: "unknown element \(found(at: start)); expected <dict>, <array>,"
                + " <string>, <integer>, <real>, <true/>, <false/>, <date> or <data>")
        }
        index = nameStart + tag.name.count
        while index < bytes.count, bytes[index] != UInt8(ascii: ">") { index += 1 }
        guard index < bytes.count else {
            throw PlistSyntaxError(offset: start, problem: "the tag <\(tag.rawValue) never ends; expected '>'")
        }
        index += 1
        // Foundation's reader refuses a tag whose `>` is the file's last byte.
        let isEmpty = bytes[index - 2] == UInt8(ascii: "/")
        guard index < bytes.count else {
            throw PlistSyntaxError(offset: index, problem: isEmpty
                ? "the file ends right after <\(tag.rawValue)/>; expected a line break after it (Foundation's reader"
                    + " refuses a document that ends with a tag's '>')"
                : "the file ends right after <\(tag.rawValue)>; expected its content and </\(tag.rawValue)>")
        }
        return (tag, start, isEmpty)
    }

    private func nameEnds(_ name: [UInt8], at offset: Int) -> Bool {
        guard offset + name.count <= bytes.count, bytes[offset..<(offset + name.count)].elementsEqual(name) else { return false }
        let after = offset + name.count
        guard after < bytes.count else { return true }
        return [0x20, 0x09, 0x0A, 0x0D, UInt8(ascii: "/"), UInt8(ascii: ">")].contains(bytes[after])
    }

    /// Reads one value element; a non-empty container is pushed onto `open` and read by the caller's loop.
    private mutating func readElement(into builder: inout PlistOutline.Builder,
                                      open: inout [OpenElement]) throws(PlistSyntaxError) {
        let (tag, start, isEmpty) = try startTag()
        let element = OpenElement(tag: tag, start: start)
        switch tag {
        case .plist:
            if isEmpty {
                throw PlistSyntaxError(offset: start, problem: "expected a value inside <plist>, found an empty <plist/>")
            }
            open.append(element)
        case .dict, .array:
            builder.begin(tag == .dict ? .dictionary : .array, at: start)
            if isEmpty {
                builder.close(at: index)
            } else {
                open.append(element)
            }
        case .key, .string:
            builder.begin(.scalar, at: start)
            if !isEmpty {
                _ = try text(of: element)
                try closeTag(element)
            }
            builder.end(at: index)
        case .data, .date, .real, .integer:
            if isEmpty {
                throw PlistSyntaxError(offset: start, problem: "expected a value between <\(tag.rawValue)> and"
                    + " </\(tag.rawValue)>, found an empty <\(tag.rawValue)/>")
            }
            builder.begin(.scalar, at: start)
            while index < bytes.count, bytes[index] != UInt8(ascii: "<") { index += 1 }
            try closeTag(element)
            builder.end(at: index)
        case .true, .false:
            builder.begin(.scalar, at: start)
            if !isEmpty { try closeTag(element) }
            builder.end(at: index)
        }
    }

    /// A dictionary's key: `<key>` (Foundation reads its text even when written `<key/>`) and `</key>`.
    private mutating func readKey(into builder: inout PlistOutline.Builder,
                                  dictionary: OpenElement) throws(PlistSyntaxError) {
        let (tag, start, _) = try startTag()
        guard tag == .key else {
            throw PlistSyntaxError(offset: start, problem: "expected <key> or </dict>, found <\(tag.rawValue)>: a value"
                + " without its key")
        }
        let element = OpenElement(tag: tag, start: start)
        let key = try text(of: element)
        try closeTag(element)
        builder.key(key, at: start)
        lastKeyStart = start
    }

    /// The text of a `<key>` or `<string>` up to its close tag: entities and CDATA sections decoded.
    private mutating func text(of element: OpenElement) throws(PlistSyntaxError) -> String {
        var out: [UInt8] = []
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "<") {
                guard index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "!") else { break }
                try cdata(into: &out)
            } else if byte == UInt8(ascii: "&") {
                try entity(into: &out)
            } else {
                out.append(byte)
                index += 1
            }
        }
        // Bytes that are not UTF-8 fail only when Foundation decodes the string, which it does not for a
        // value a later duplicate replaces; the loader finds them in the value that failed.
        return String(decoding: out, as: UTF8.self)
    }

    private mutating func cdata(into out: inout [UInt8]) throws(PlistSyntaxError) {
        let start = index
        guard matches("<![CDATA[", at: index) else {
            throw PlistSyntaxError(offset: start, problem: "expected <![CDATA[ or text, found \(found(at: start))")
        }
        index += 9
        // Foundation's search stops two bytes short of the end.
        while index < bytes.count - 2 {
            if matches("]]>", at: index) {
                index += 3
                return
            }
            out.append(bytes[index])
            index += 1
        }
        throw PlistSyntaxError(offset: start, problem: "this CDATA section never ends; expected ']]>'")
    }

    /// One entity reference; `index` is at its `&`.
    private mutating func entity(into out: inout [UInt8]) throws(PlistSyntaxError) {
        let start = index
        let named: [(String, UInt8)] = [("&lt;", UInt8(ascii: "<")), ("&gt;", UInt8(ascii: ">")),
                                        ("&amp;", UInt8(ascii: "&")), ("&apos;", UInt8(ascii: "'")),
                                        ("&quot;", UInt8(ascii: "\""))]
        for (text, byte) in named where matches(text, at: start) {
            out.append(byte)
            index += text.utf8.count
            return
        }
        guard start + 1 < bytes.count, bytes[start + 1] == UInt8(ascii: "#") else {
            throw undefinedEntity(at: start)
        }
        index = start + 2
        let isHex = index < bytes.count && bytes[index] == UInt8(ascii: "x")
        if isHex { index += 1 }
        var value: UInt32 = 0
        var count = 0
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            count += 1
            if byte == UInt8(ascii: ";") {
                guard let scalar = Unicode.Scalar(value) else {
                    throw PlistSyntaxError(offset: start, problem: "the character reference \(reference(from: start)) names"
                        + " no Unicode character; expected a scalar value up to 0x10FFFF, not a surrogate")
                }
                out.append(contentsOf: Array(String(scalar).utf8))
                return
            }
            if count > 8 {
                throw PlistSyntaxError(offset: start, problem: "the character reference \(reference(from: start)) is"
                    + " too long; expected ';' within eight characters")
            }
            let digit: UInt32?
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f") where isHex: digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F") where isHex: digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: digit = nil
            }
            guard let digit else {
                throw PlistSyntaxError(offset: index - 1, problem: "expected \(isHex ? "a hexadecimal" : "a decimal") digit"
                    + " or ';' in the character reference \(reference(from: start)), found \(found(at: index - 1))")
            }
            value = (isHex ? value &<< 4 : value &* 10) &+ digit
        }
        throw PlistSyntaxError(offset: start, problem: "the file ends inside the character reference"
            + " \(reference(from: start)); expected ';'")
    }

    private func undefinedEntity(at start: Int) -> PlistSyntaxError {
        PlistSyntaxError(offset: start, problem: "\(reference(from: start)) is not an entity a property list defines;"
            + " expected &lt; &gt; &amp; &apos; &quot; or a character reference such as &#38;")
    }

    /// `&name;` as written, up to its `;` (bounded), for messages.
    private func reference(from start: Int) -> String {
        var end = start + 1
        while end < bytes.count, end - start < 24, bytes[end] != UInt8(ascii: ";"),
              ![0x20, 0x09, 0x0A, 0x0D, UInt8(ascii: "<"), UInt8(ascii: "&")].contains(bytes[end]) { end += 1 }
        if end < bytes.count, bytes[end] == UInt8(ascii: ";") { end += 1 }
        return "'\(SyntaxQuote.quoted(bytes[start..<end]))'"
    }

    /// The close tag of `element`; `index` at its `<` (white space before `>` allowed, as in Foundation).
    private mutating func closeTag(_ element: OpenElement) throws(PlistSyntaxError) {
        let name = element.tag.name
        func mismatch(_ tail: String = "") -> PlistSyntaxError {
            let what = element.tag == .plist || element.tag == .dict || element.tag == .array
                ? " to close <\(element.tag.rawValue)> (opened at \(opened(element)))" : ""
            return PlistSyntaxError(offset: index, problem: "expected </\(element.tag.rawValue)>\(what), found"
                + " \(found(at: index))\(tail)")
        }
        if index >= bytes.count { throw endInside(element) }
        guard index + name.count + 3 <= bytes.count else { throw mismatch(" and the end of the file") }
        guard bytes[index] == UInt8(ascii: "<"), bytes[index + 1] == UInt8(ascii: "/"),
              bytes[(index + 2)..<(index + 2 + name.count)].elementsEqual(name) else { throw mismatch() }
        var after = index + 2 + name.count
        while after < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[after]) { after += 1 }
        guard after < bytes.count else { throw mismatch(" and the end of the file") }
        guard bytes[after] == UInt8(ascii: ">") else { throw mismatch() }
        index = after + 1
    }

    // MARK: Bytes

    private mutating func skipWhitespace() {
        while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
    }

    private func matches(_ text: String, at offset: Int) -> Bool {
        let utf8 = text.utf8
        guard offset >= 0, offset + utf8.count <= bytes.count else { return false }
        return bytes[offset..<(offset + utf8.count)].elementsEqual(utf8)
    }

    /// What sits at `offset`, for messages: `</plist>` (a tag up to its `>`), `text 'abc'`, the end of the file.
    private func found(at offset: Int) -> String {
        guard offset < bytes.count else { return "the end of the file" }
        if bytes[offset] == UInt8(ascii: "<") {
            var end = offset + 1
            while end < bytes.count, end - offset < 40, bytes[end] != UInt8(ascii: ">"), bytes[end] != UInt8(ascii: "<") {
                end += 1
            }
            if end < bytes.count, bytes[end] == UInt8(ascii: ">") { end += 1 }
            return SyntaxQuote.quoted(bytes[offset..<end], limit: 40)
        }
        var end = offset
        while end < bytes.count, end - offset < 24, bytes[end] != UInt8(ascii: "<"), bytes[end] != 0x0A { end += 1 }
        return "text '\(SyntaxQuote.quoted(bytes[offset..<end]))'"
    }

}
