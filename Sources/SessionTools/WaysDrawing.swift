package import MapLogic
package import NavCore

/// The walkable ways drawn under a report's tracks (a map's walking graph, loaded by `Runtime`'s `WalkableWays`).
package enum WaysDrawing {
    /// One SVG path of the graph's segments with an end inside `bounds` (pixels), through `xy`.
    package static func path(
        _ graph: WalkingGraph, xy: (Coordinate) -> (Double, Double), bounds: (width: Double, height: Double)
    ) -> String {
        var d = ""
        for segment in graph.segments {
            let a = xy(graph.nodes[Int(segment.a)]), b = xy(graph.nodes[Int(segment.b)])
            func inside(_ p: (Double, Double)) -> Bool {
                p.0 >= -20 && p.0 <= bounds.width + 20 && p.1 >= -20 && p.1 <= bounds.height + 20
            }
            guard inside(a) || inside(b) else { continue }
            d += "M\(Self.short(a.0)) \(Self.short(a.1))L\(Self.short(b.0)) \(Self.short(b.1))"
        }
        guard !d.isEmpty else { return "" }
        return
            "<path class=\"ways\" d=\"\(d)\" fill=\"none\" stroke=\"#d6d6d6\" stroke-width=\"2.5\" stroke-linecap=\"round\"/>"
    }

    private static func short(_ value: Double) -> String { fixedDecimal(value, digits: 1) }
}
