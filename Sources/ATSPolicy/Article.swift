/// "a string", "an integer": for messages that name a value's type.
package func withArticle(_ noun: String) -> String {
    (noun.first.map { "aeiou".contains($0) } ?? false) ? "an \(noun)" : "a \(noun)"
}
