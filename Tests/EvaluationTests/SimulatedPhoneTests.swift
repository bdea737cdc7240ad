import Evaluation
import Glibc
import Links
import SystemIO
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
        // "Third right", a junction later "second right": the same turn told again; then "third right" once more is
        // a turn farther on. A straight on is straight.
        band.take(type: "pulse", payload: [6, 200, 3], left: 0, right: 0, time: 31)
        band.take(type: "pulse", payload: [6, 200, 2], left: 0, right: 0, time: 32)
        band.take(type: "pulse", payload: [6, 200, 3], left: 0, right: 0, time: 33)
        band.take(type: "pulse", payload: [9, 160, 1], left: 0, right: 0, time: 34)
        let told = band.drainEvents()
        #expect(told[0].manoeuvre == told[1].manoeuvre && told[1].manoeuvre != told[2].manoeuvre)
        #expect(told[1].junctionsBefore == 1 && told[1].turnDegrees > 0)
        #expect(told[3].phase == .straightOn && told[3].turnDegrees == 0)
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

/// The simulated phone on a live phyphox stand-in: what it records is served as the app serves it.
@Suite struct SimulatedPhoneServingTests {
    @Test func aWalkingPhoneIsServedItsFixesAndSensors() async throws {
        let standIn = try PhyphoxStandIn(liveOn: "127.0.0.1")
        defer { standIn.close() }
        var phone = SimulatedPhone(standIn: standIn, seed: 3)
        let start = Coordinate(latitude: 43.7305, longitude: 7.4152)
        let t0 = SystemClock.wallSeconds()
        for step in 0...40 {
            try await Task.sleep(for: .milliseconds(50))
            let now = SystemClock.wallSeconds()
            let position = FlatProjection(origin: start).unproject(ENU(east: 0, north: 1.3 * (now - t0)))
            phone.advance(to: now, position: position, bodyHeadingDegrees: 0, speed: 1.3, hold: .pocket(offset: 70))
            _ = step
        }
        let client = try #require(HTTPClient(baseURL: standIn.url))
        let answer = try await client.send(
            method: "GET", path: "/get?locTime=full&locLat=full&accX=full&magZ=full", timeoutSeconds: 5)
        let text = String(decoding: answer.body, as: UTF8.self)
        // Numbers as the app writes them (Java's doubles): 43.7305… is 4.37305…E1.
        #expect(text.contains("\"buffer\":[4.3730"), "a fix a second: \(text.prefix(300))")
        #expect(text.split(separator: ",").count > 100, "about 2 s of 50 Hz samples: \(text.count) bytes")
    }
}
