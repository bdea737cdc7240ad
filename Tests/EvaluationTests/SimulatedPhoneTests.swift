import Evaluation
import Glibc
import LocationSources
import NavCore
import Testing

/// The rehearsal's phone and band, piece by piece: what the simulated phone's sensors read turns back, through the
/// same tilt-compensated compass the phone sources use, into the heading, pitch and roll it was made from; and the
/// band's frames become what a walker feels.
@Suite struct SimulatedPhoneTests {
    @Test(arguments: [(0.0, 0.0, 0.0), (73.0, 25.0, 10.0), (200.0, -30.0, -20.0), (315.0, 60.0, 40.0)])
    func theSensorsReadBackAsTheHoldTheyWereMadeFrom(_ hold: (Double, Double, Double)) {
        // Monaco's field (about 46 µT, dip 58°, declination +2.6°) in true-north components.
        let vectors = PhoneSensors.deviceVectors(
            headingDegrees: hold.0, pitchDegrees: hold.1, rollDegrees: hold.2, north: 23.6, east: 1.1, down: 38.9)
        let back = TiltCompensation.orientation(accelerometer: vectors.up, magnetometer: vectors.field)
        let orientation = try! #require(back)
        // TiltCompensation's heading is against the field's north: the declination (atan2(east, north)) apart.
        let declination = atan2(1.1, 23.6) * 180 / .pi
        let heading = Angle.normalized(orientation.headingDegrees + declination)
        #expect(Angle.separation(heading, hold.0) < 0.01, "heading \(heading) for \(hold.0)")
        #expect(abs(orientation.pitchDegrees - hold.1) < 0.01)
        #expect(abs(orientation.rollDegrees - hold.2) < 0.01)
    }

    @Test func theBandsFramesAreFeltAsCuesAndEvents() {
        var band = FeltBand()
        band.take(type: "setMotors", payload: [0, 180], left: 0, right: 180, time: 1)
        #expect(band.cue(at: 1) == .turnRight)
        band.take(type: "setMotors", payload: [0, 0], left: 0, right: 0, time: 2)
        band.take(type: "pulse", payload: [1, 255, 1], left: 0, right: 0, time: 2)
        #expect(band.cue(at: 2.5) == .turnAround)
        #expect(band.cue(at: 4) == .silent, "a turn-around felt for a moment")
        // "Second left": two pulses of the left motor's count pattern, then *now* on the left: the same manoeuvre.
        band.take(type: "pulse", payload: [5, 200, 2], left: 0, right: 0, time: 5)
        band.take(type: "pulse", payload: [7, 255, 1], left: 0, right: 0, time: 30)
        let events = band.drainEvents()
        #expect(events.map(\.phase) == [.announce, .now])
        #expect(events[0].junctionsBefore == 1 && events[0].turnDegrees < 0)
        #expect(events[0].manoeuvre == events[1].manoeuvre)
        #expect(band.drainEvents().isEmpty)
        band.take(type: "pulse", payload: [4, 90, 1], left: 0, right: 0, time: 31)
        #expect(band.lastTick?.level == 90)
        band.take(type: "pulse", payload: [2, 255, 1], left: 0, right: 0, time: 40)
        #expect(band.cue(at: 41) == .arrival && band.arrived)
        band.take(
            line:
                #"{"receiveTimeSeconds":42.0,"type":"setMotors","sequence":9,"payload":[120,0],"motors":{"left":120,"right":0}}"#
        )
        #expect(band.left == 120)
    }
}
