import Foundation

/// The run as one SVG: a panel per series over time, the second half's fitted line on the judged
/// series (green when flat, red when it grows), and the reloads (blue) and descriptor bursts
/// (orange) marked where they happened. No scripts, no external assets.
struct Chart {
    let samples: [Sample]
    let trends: [Trend]
    let reloads: [Double]
    let bursts: [Double]
    let duration: Double
    let title: String

    private struct Panel {
        var title: String
        var unit: String
        var lines: [(label: String, color: String, points: [(Double, Double)])]
        var trend: Trend?
    }

    private var panels: [Panel] {
        func points(_ value: (Sample) -> Double?) -> [(Double, Double)] {
            samples.compactMap { sample in value(sample).map { (sample.time, $0) } }
        }
        func trend(_ name: String) -> Trend? { trends.first { $0.name == name } }
        return [
            Panel(title: "descriptors", unit: "fds", lines: [("fds", "#1f77b4", points { Double($0.descriptors) })],
                  trend: trend("descriptors")),
            Panel(title: "RSS", unit: "MiB", lines: [("RSS", "#1f77b4", points { Double($0.rssKiB) / 1024 })], trend: trend("RSS")),
            Panel(title: "threads", unit: "threads", lines: [("threads", "#1f77b4", points { Double($0.threads) })],
                  trend: trend("threads")),
            Panel(title: "CLOSE_WAIT sockets", unit: "sockets", lines: [("CLOSE_WAIT", "#1f77b4", points { Double($0.closeWait) })],
                  trend: trend("CLOSE_WAIT")),
            Panel(title: "latency of the load", unit: "ms", lines: [
                ("p50", "#2ca02c", points { $0.p50 }), ("p99", "#1f77b4", points { $0.p99 }),
            ], trend: trend("p99 latency")),
            Panel(title: "requests per interval", unit: "requests", lines: [("requests", "#1f77b4", points { Double($0.requests) })],
                  trend: nil),
            Panel(title: "load errors per interval", unit: "errors", lines: [("errors", "#d62728", points { Double($0.errors) })],
                  trend: trend("errors")),
            Panel(title: "faults per interval", unit: "faults", lines: [
                ("faults run", "#7f7f7f", points { Double($0.faults) }),
                ("not as expected", "#ff7f0e", points { Double($0.faultErrors) }),
            ], trend: nil),
        ]
    }

    func svg() -> String {
        let width = 460.0, height = 230.0, columns = 2
        let all = panels
        let rows = (all.count + columns - 1) / columns
        let total = (w: width * Double(columns), h: height * Double(rows) + 50)
        var out = [##"<svg xmlns="http://www.w3.org/2000/svg" width="\##(Int(total.w))" height="\##(Int(total.h))" font-family="sans-serif" font-size="11">"##]
        out.append(##"<rect width="100%" height="100%" fill="white"/>"##)
        out.append(##"<text x="10" y="22" font-size="14" font-weight="bold">\##(escape(title))</text>"##)
        out.append(##"<text x="10" y="40"><tspan fill="#1f77b4">| reload (SIGHUP)</tspan>  <tspan fill="#ff7f0e">| descriptor burst</tspan>  <tspan fill="#2ca02c">- - flat</tspan>  <tspan fill="#d62728">- - grows</tspan> (second half's fit)</text>"##)
        for (index, panel) in all.enumerated() {
            let x0 = Double(index % columns) * width, y0 = 50 + Double(index / columns) * height
            out += draw(panel, x: x0, y: y0, width: width, height: height)
        }
        out.append("</svg>")
        return out.joined(separator: "\n") + "\n"
    }

    private func draw(_ panel: Panel, x: Double, y: Double, width: Double, height: Double) -> [String] {
        let left = x + 55, right = x + width - 30, top = y + 28, bottom = y + height - 30
        let values = panel.lines.flatMap { $0.points.map(\.1) }
        let maximum = max(1, (values.max() ?? 1) * 1.1)
        let span = max(duration, 1)
        func px(_ t: Double) -> Double { left + (right - left) * t / span }
        func py(_ v: Double) -> Double { bottom - (bottom - top) * v / maximum }
        var out: [String] = []
        var heading = panel.title + " (\(panel.unit))"
        if let trend = panel.trend { heading += trend.grows ? " - GROWS" : (trend.fit == nil ? "" : " - flat") }
        out.append(##"<text x="\##(x + 10)" y="\##(y + 16)" font-weight="bold" fill="\##(panel.trend?.grows == true ? "#d62728" : "black")">\##(escape(heading))</text>"##)
        out.append(##"<rect x="\##(left)" y="\##(top)" width="\##(right - left)" height="\##(bottom - top)" fill="none" stroke="#999"/>"##)
        for fraction in [0.0, 0.5, 1.0] {
            let value = maximum * fraction
            out.append(##"<line x1="\##(left - 4)" y1="\##(py(value))" x2="\##(left)" y2="\##(py(value))" stroke="#999"/>"##)
            out.append(##"<text x="\##(left - 6)" y="\##(py(value) + 4)" text-anchor="end">\##(short(value))</text>"##)
        }
        let step = span <= 120 ? 10.0 : (span <= 900 ? 60.0 : 300.0)
        var tick = 0.0
        while tick <= span + 0.001 {
            out.append(##"<line x1="\##(px(tick))" y1="\##(bottom)" x2="\##(px(tick))" y2="\##(bottom + 4)" stroke="#999"/>"##)
            let label = step < 60 ? "\(Int(tick)) s" : "\(Int(tick / 60)) min"
            out.append(##"<text x="\##(px(tick))" y="\##(bottom + 16)" text-anchor="middle">\##(label)</text>"##)
            tick += step
        }
        for (times, color) in [(reloads, "#1f77b4"), (bursts, "#ff7f0e")] {
            for time in times {
                out.append(##"<line x1="\##(px(time))" y1="\##(top)" x2="\##(px(time))" y2="\##(bottom)" stroke="\##(color)" stroke-dasharray="2,3" stroke-opacity="0.7"/>"##)
            }
        }
        for line in panel.lines where !line.points.isEmpty {
            let path = line.points.map { "\(px($0.0)),\(py($0.1))" }.joined(separator: " ")
            out.append(##"<polyline points="\##(path)" fill="none" stroke="\##(line.color)" stroke-width="1.5"/>"##)
            for point in line.points {
                out.append(##"<circle cx="\##(px(point.0))" cy="\##(py(point.1))" r="2" fill="\##(line.color)"/>"##)
            }
        }
        if let trend = panel.trend, let fit = trend.fit, let first = trend.points.first, let last = trend.points.last {
            let color = trend.grows ? "#d62728" : "#2ca02c"
            let y1 = fit.intercept + fit.slope * first.time / 60, y2 = fit.intercept + fit.slope * last.time / 60
            out.append(##"<line x1="\##(px(first.time))" y1="\##(py(max(0, y1)))" x2="\##(px(last.time))" y2="\##(py(max(0, y2)))" stroke="\##(color)" stroke-width="2" stroke-dasharray="6,3"/>"##)
        }
        var legendX = right
        for line in panel.lines.reversed() {
            out.append(##"<text x="\##(legendX)" y="\##(y + 16)" text-anchor="end" fill="\##(line.color)">\##(escape(line.label))</text>"##)
            legendX -= 8 + Double(line.label.count) * 6.5
        }
        return out
    }

    private func short(_ value: Double) -> String {
        value >= 10_000 ? String(format: "%.0fk", value / 1000) : (value >= 10 ? String(format: "%.0f", value) : String(format: "%.1f", value))
    }

    private func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
    }
}
