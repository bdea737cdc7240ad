import Devices
import NavCore
import Testing

/// What the band says of turn events: one turn at a time, how sharp at the junction, a straight on only at its junction.
@Suite struct BandTurnTellingTests {
    static func event(
        _ phase: TurnPhase, route: UInt32 = 1, manoeuvre: UInt32, junctionsBefore: UInt32, degrees: Double,
        at time: Double
    ) -> TurnEvent {
        TurnEvent(
            timeSeconds: time, routeID: route, manoeuvre: manoeuvre, phase: phase, turnDegrees: degrees,
            junctionsBefore: junctionsBefore, distanceMeters: 10, outgoingBearingDegrees: 0)
    }

    /// The route stage's batches (Monaco's route 6 as `eval walkers` heard it): at one fix, every turn within three
    /// junctions with its count. Told on the band, "one right, two left, three left" would leave a wearer unable to say
    /// which count is which turn's; the band tells the next turn only, then the one after once it is the next.
    @Test func ofTheTurnsAnnouncedTogetherOnlyTheNextIsTold() {
        var telling = BandProtocol.TurnTelling()
        let first = [
            Self.event(.announce, manoeuvre: 0, junctionsBefore: 0, degrees: 62, at: 36),
            Self.event(.announce, manoeuvre: 1, junctionsBefore: 1, degrees: -45, at: 36),
            Self.event(.announce, manoeuvre: 2, junctionsBefore: 2, degrees: -56, at: 36),
        ]
        var told: [Bool] = []
        for event in first { told.append(telling.tells(event)) }
        #expect(told == [true, false, false])
        let nowTold = telling.tells(Self.event(.now, manoeuvre: 0, junctionsBefore: 0, degrees: 62, at: 133))
        #expect(nowTold)
        // Past that junction: the next turn and a straight on three junctions on; the straight on is told only when
        // it is at the next junction.
        let second = [
            Self.event(.announce, manoeuvre: 1, junctionsBefore: 0, degrees: -45, at: 145),
            Self.event(.announce, manoeuvre: 2, junctionsBefore: 1, degrees: -56, at: 145),
            Self.event(.straightOn, manoeuvre: 3, junctionsBefore: 3, degrees: -1, at: 145),
        ]
        told = []
        for event in second { told.append(telling.tells(event)) }
        #expect(told == [true, false, false])
        let straightOnTold = telling.tells(
            Self.event(.straightOn, manoeuvre: 3, junctionsBefore: 0, degrees: -1, at: 279))
        #expect(straightOnTold)
        // A new route's first announcement is told, whatever its time.
        let newRouteTold = telling.tells(
            Self.event(.announce, route: 2, manoeuvre: 0, junctionsBefore: 1, degrees: 90, at: 279))
        #expect(newRouteTold)
    }

    @Test(arguments: [
        (20.0, BandProtocol.Pattern.bearRight), (-44, .bearLeft), (45, .nowRight), (-90, .nowLeft), (134, .nowRight),
        (-135, .sharpLeft), (169, .sharpRight), (170, .backRight), (-175, .backLeft),
    ])
    func nowSaysHowSharpTheTurnIsAsTheSpeakerDoes(_ turn: (Double, BandProtocol.Pattern)) {
        let frames = BandProtocol.frames(
            for: Self.event(.now, manoeuvre: 0, junctionsBefore: 0, degrees: turn.0, at: 1))
        #expect(frames.count == 1 && frames[0].0 == .pulse)
        #expect(frames.first?.1 == [turn.1.rawValue, 255, 1])
        // The speaker's words for the same turn: "bear", plain, or "sharp".
        let words = TurnWords.direction(turn.0)
        let said: BandProtocol.Sharpness =
            words.hasPrefix("sharp")
            ? .sharp
            : words.hasPrefix("back") ? .back : words.hasPrefix("bear") || words == "straight" ? .bear : .turn
        #expect(BandProtocol.Sharpness(turnDegrees: turn.0) == said)
    }
}
