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
        #expect(
            WalkerEvaluation.keptToRoute(self.choice(junctionNorth: 50, branchEast: 0, branchNorth: 58), line: line)
                == true)
        #expect(
            WalkerEvaluation.keptToRoute(self.choice(junctionNorth: 50, branchEast: 8, branchNorth: 50), line: line)
                == false)
        #expect(
            WalkerEvaluation.keptToRoute(self.choice(junctionNorth: 100, branchEast: 8, branchNorth: 100), line: line)
                == nil)
        #expect(
            WalkerEvaluation.keptToRoute(self.choice(junctionNorth: 99.5, branchEast: 8, branchNorth: 99.5), line: line)
                == nil)
        #expect(
            WalkerEvaluation.keptToRoute(self.choice(junctionNorth: 97, branchEast: 8, branchNorth: 97), line: line)
                == false)
    }
}
