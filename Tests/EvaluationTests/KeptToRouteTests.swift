@testable import Evaluation
import NavCore
import Testing

/// Which junctions a network participant's choice is judged at against the route in force.
@Suite struct KeptToRouteTests {
    static let start = Coordinate(latitude: 43.73, longitude: 7.42)

    func point(east: Double, north: Double) -> Coordinate {
        FlatProjection(origin: Self.start).unproject(ENU(east: east, north: north))
    }

    func choice(junctionNorth: Double, branchEast: Double, branchNorth: Double) -> NetworkParticipant.Choice {
        NetworkParticipant.Choice(
            junction: self.point(east: 0, north: junctionNorth),
            branchPoint: self.point(east: branchEast, north: branchNorth), stopped: false, wentBack: false)
    }

    /// A route 100 m north: at a junction halfway, going on north keeps to it and turning east does not; at a
    /// junction where the route ends no branch is the route's, and a walker who steps on past the destination there
    /// is not judged (an overshoot, not a wrong branch).
    @Test func aJunctionAtTheRoutesEndIsNoChoiceOfTheRoutes() {
        let line = Polyline([self.point(east: 0, north: 0), self.point(east: 0, north: 100)])
        /// Judged at a junction `north` up the route, the branch taken through the point given.
        func kept(at north: Double, through branch: (east: Double, north: Double)) -> Bool? {
            WalkerEvaluation.keptToRoute(
                self.choice(junctionNorth: north, branchEast: branch.east, branchNorth: branch.north), line: line)
        }
        #expect(kept(at: 50, through: (0, 58)) == true)
        #expect(kept(at: 50, through: (8, 50)) == false)
        #expect(kept(at: 100, through: (8, 100)) == nil)
        #expect(kept(at: 99.5, through: (8, 99.5)) == nil)
        #expect(kept(at: 97, through: (8, 97)) == false)
    }
}
