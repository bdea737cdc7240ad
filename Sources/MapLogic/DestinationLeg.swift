public import NavCore

/// A router's route as a walker follows it to the destination. A map router ends its route at the way nearest the
/// destination, which may be short of it (a door off the street, a square without ways): its end must not be taken
/// for the destination, or the walker is told they have arrived where they are not.
public enum DestinationLeg {
    /// Its setting, a route stage's `destinationLegMeters`.
    public enum Setting {
        public static let legMeters = SettingSpec(
            "destinationLegMeters", unit: "m", default: 30.0, in: 0...500,
            "a router's route that ends farther than arrivalRadiusMeters from the destination (at the way nearest it) is followed by a straight last leg to it when that is no longer than this; a longer gap refuses the route as that provider's failure (the next is asked, else the status says so and nothing is guided), so the walker is never told they have arrived where the route ends short of the destination"
        )
    }

    /// The route to follow, and, when a straight last leg to the destination was added, how far along it that leg
    /// starts [metres] and how long it is [metres].
    public struct Reached: Sendable {
        public var plan: RoutePlan
        public var lastLeg: (fromMeters: Double, lengthMeters: Double)?
    }

    /// The route that reaches `destination`: `plan` as it is when it ends within `arrivalRadiusMeters` of it (or when
    /// `routesToTheDestination` is false: a saved route ends where it ends); else with a straight last leg to it no
    /// longer than `legMeters`. A route that ends farther, or whose end cannot be measured, is refused as `provider`'s
    /// failure.
    public static func reaching(
        _ destination: Coordinate, by plan: RoutePlan, routesToTheDestination: Bool = true,
        arrivalRadiusMeters: Double, legMeters: Double, provider: String
    ) throws(RoutingError) -> Reached {
        guard routesToTheDestination, let end = plan.points.last else { return Reached(plan: plan) }
        let gap = FlatProjection.distance(end, destination)
        guard !(gap <= arrivalRadiusMeters) else { return Reached(plan: plan) }
        guard gap <= legMeters else {
            throw .providerFailed(
                reason:
                    "\(provider): the route ends \(gap.isFinite ? "\(Int(gap.rounded())) m" : "an unmeasured distance") from the destination, farther than destinationLegMeters (\(Int(legMeters.rounded())) m)"
            )
        }
        return Reached(
            plan: RoutePlan(
                points: plan.points + [destination], segmentNames: plan.segmentNames + [nil],
                reportedLengthMeters: plan.reportedLengthMeters.map { $0 + gap }),
            lastLeg: (Polyline(plan.points).lengthMeters, gap))
    }
}
