/// `--repeat N`: the whole run N times, column after column each round (so a drift of the shared
/// machine spreads over every column instead of landing on one), then each figure as the median of
/// its rounds with the spread beside it. A single rate moves by up to 2x between runs; a median of
/// several, with its spread, says how far one run can be trusted.
extension Results {
    /// The smallest and largest value of one figure over the rounds that measured it.
    struct Spread {
        var values: [Double]
        var minimum: Double { values.min() ?? 0 }
        var maximum: Double { values.max() ?? 0 }
        var median: Double {
            let sorted = values.sorted()
            let middle = sorted.count / 2
            return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
        }
        /// (max - min) / median, percent: the width of the band one run falls in.
        var percent: Double? { median != 0 ? 100 * (maximum - minimum) / abs(median) : nil }
    }

    /// The rounds folded into one: every figure the median of the rounds that measured it (its
    /// spread kept), error counts added up, notes and versions from the rounds, the log of each
    /// round under its number, and each column's share of other processes' CPU at its worst.
    static func combined(_ rounds: [Results]) -> Results {
        guard rounds.count > 1 else { return rounds.first ?? Results() }
        let combined = Results()
        var collected: [String: [Double]] = [:]
        for round in rounds {
            for (key, value) in round.allValues { collected[key, default: []].append(value) }
        }
        for (key, values) in collected {
            let spread = Spread(values: values)
            combined.setValue(spread.median, key: key)
            combined.spreads[key] = spread
        }
        for (index, round) in rounds.enumerated() {
            for (key, count) in round.allErrors { combined.addErrors(count, key: key) }
            for (key, note) in round.allNotes where !(combined.noteText(key) ?? "").contains(note) {
                combined.appendNote(note, key: key)
            }
            if !round.log.isEmpty { combined.log += ["round \(index + 1):"] + round.log.map { "  " + $0 } }
            for (column, share) in round.otherLoad { combined.otherLoad[column] = max(combined.otherLoad[column] ?? 0, share) }
        }
        let first = rounds[0]
        combined.versions = first.versions
        combined.ciphers = first.ciphers
        combined.otherProcesses = first.otherProcesses
        combined.syscallMix = first.syscallMix
        combined.checkReasons = first.checkReasons
        combined.rounds = rounds.count
        return combined
    }

    func spread(_ column: String, _ metric: String) -> Spread? { spreads[column + ":" + metric] }
}
