import NavCore
import Testing
import HapticLogic

/// A synthetic walker for calibration: turning toward north with the phone flat until it goes quiet (a sample
/// after the north window is entered, at 353°), standing a moment with the phone still flat, then walking that way
/// with the phone in a pocket that reads `pocketOffset` away from the walking direction.
struct CalibrationScript {
    var pocketOffset = 73.0
    var headingNoise = 2.0
    var pocketPitch = 40.0
    var seed: UInt64 = 1
    /// How long the walker holds the phone flat after stopping [seconds].
    var holdSeconds = 0.6

    /// Inputs at 10 Hz, in time order; `tiltAfterWalking` seconds after the walk starts, the phone stands
    /// upright for 1.5 s.
    func inputs(tiltAfterWalking: Double? = nil) -> [Calibration.Input] {
        var random = SeededGenerator(seed: self.seed)
        var inputs: [Calibration.Input] = []
        var t = 0.0
        // (a) Turn from 200° towards north (through 270°), phone flat, 30°/s, until a sample inside the north
        // window (350°–10°), then stand, the phone still flat.
        var heading = 200.0
        var inside = 0
        while inside < 2 {
            inputs.append(.attitude(Attitude(timeSeconds: t, pitchDegrees: 3, rollDegrees: -2)))
            inputs.append(.heading(HeadingSample(timeSeconds: t, headingDegrees: Angle.normalized(heading))))
            if Angle.isInWindow(heading, from: 350, to: 10) { inside += 1 }
            if inside < 2 { heading += 3 }
            t += 0.1
        }
        let facing = heading
        for _ in 0..<Int((self.holdSeconds * 10).rounded()) {
            inputs.append(.attitude(Attitude(timeSeconds: t, pitchDegrees: 3, rollDegrees: -2)))
            let raw = facing + random.gaussian(standardDeviation: self.headingNoise)
            inputs.append(.heading(HeadingSample(timeSeconds: t, headingDegrees: Angle.normalized(raw))))
            t += 0.1
        }
        // (b) Stand still while the phone goes into the pocket, then (c) walk the way it faces.
        let walkStart = t + 6
        for step in 0..<1200 {
            let walking = step >= 60
            let tilted = tiltAfterWalking.map { t >= walkStart + $0 && t < walkStart + $0 + 1.5 } ?? false
            let pitch = tilted ? 86.0 : self.pocketPitch
            inputs.append(.attitude(Attitude(timeSeconds: t, pitchDegrees: pitch, rollDegrees: 5)))
            inputs.append(.speed(timeSeconds: t, metersPerSecond: walking ? 1.3 : 0))
            let raw = facing + self.pocketOffset + random.gaussian(standardDeviation: self.headingNoise)
            inputs.append(.heading(HeadingSample(timeSeconds: t, headingDegrees: Angle.normalized(raw))))
            t += 0.1
        }
        return inputs
    }

    static func run(
        _ inputs: [Calibration.Input], options: Calibration.Options = .init()
    ) -> (Calibration, [BusMessage]) {
        var calibration = Calibration(options: options)
        var out: [BusMessage] = []
        for input in inputs { out += calibration.update(input) }
        return (calibration, out)
    }
}

@Suite struct CalibrationTests {
    private func states(_ messages: [BusMessage]) -> [CalibrationState] {
        messages.compactMap { if case let .calibrationState(state) = $0 { state } else { nil } }
    }

    @Test func aSteadyWalkFindsThePocketOffset() throws {
        let (calibration, out) = CalibrationScript(pocketOffset: 73).inputs() |> { CalibrationScript.run($0) }
        let result = try #require(calibration.result)
        #expect(result.succeeded)
        #expect(Angle.separation(result.offsetDegrees, 73) < 1.5)
        #expect(result.sampleCount == 50)
        #expect(result.spreadDegrees <= 10)
        let steps = self.states(out).map(\.step)
        #expect(steps.first == .findNorth)
        #expect(steps.contains(.putAway) && steps.contains(.move))
        #expect(steps.last == .done)
        // The countdown speaks 5, 4, 3, 2, 1.
        let countdown = self.states(out).filter { $0.step == .putAway }.map(\.prompt)
        #expect(countdown.suffix(5) == ["5", "4", "3", "2", "1"])
        #expect(self.states(out).allSatisfy { !$0.prompt.isEmpty && $0.prompt.count < 200 })
    }

    @Test func anOffsetAcrossNorthAveragesCircularly() throws {
        let (calibration, _) =
            CalibrationScript(pocketOffset: 358, headingNoise: 3).inputs() |> { CalibrationScript.run($0) }
        let result = try #require(calibration.result)
        #expect(result.succeeded)
        #expect(
            Angle.separation(result.offsetDegrees, 358) < 2, "\(result.offsetDegrees) is not the arithmetic mean ~180")
    }

    @Test func northFindingCueIsTheAngleToNorthOver180() {
        var calibration = Calibration()
        let out = calibration.update(.heading(HeadingSample(timeSeconds: 0, headingDegrees: 270)))
        let cue = self.states(out).last?.cueIntensity
        #expect(cue == 0.5)
        let out2 = calibration.update(.heading(HeadingSample(timeSeconds: 0.1, headingDegrees: 36)))
        #expect(self.states(out2).last?.cueIntensity == 0.2)
        #expect(calibration.step == .findNorth)
        _ = calibration.update(.heading(HeadingSample(timeSeconds: 0.2, headingDegrees: 355)))
        #expect(calibration.step == .putAway)
    }

    @Test func theNorthWindowIsConfigurable() {
        var options = Calibration.Options()
        options.northWindowStartDegrees = 355
        options.northWindowEndDegrees = 5
        var calibration = Calibration(options: options)
        _ = calibration.update(.heading(HeadingSample(timeSeconds: 0, headingDegrees: 352)))
        #expect(calibration.step == .findNorth)
        _ = calibration.update(.heading(HeadingSample(timeSeconds: 0.1, headingDegrees: 3)))
        #expect(calibration.step == .putAway)
    }

    @Test func aPhoneNotHeldFlatDoesNotFindNorth() {
        var calibration = Calibration()
        _ = calibration.update(.attitude(Attitude(timeSeconds: 0, pitchDegrees: 60, rollDegrees: 0)))
        let out = calibration.update(.heading(HeadingSample(timeSeconds: 0.1, headingDegrees: 0)))
        #expect(calibration.step == .findNorth)
        #expect(self.states(out).last?.prompt.contains("flat") == true)
    }

    @Test func scatteredHeadingsAbortWithTheSpreadAsReason() throws {
        var options = Calibration.Options()
        options.moveTimeoutSeconds = 30
        let (calibration, out) =
            CalibrationScript(pocketOffset: 120, headingNoise: 35).inputs() |> {
                CalibrationScript.run($0, options: options)
            }
        let result = try #require(calibration.result)
        #expect(!result.succeeded)
        #expect(result.reason.contains("spread"))
        #expect(result.spreadDegrees > 10)
        #expect(self.states(out).last?.step == .aborted)
    }

    @Test func aTiltEpisodeInTheFlipBandAborts() throws {
        let script = CalibrationScript(pocketOffset: 73)
        // Upright 2 s into the walk, before 50 samples are in.
        let (calibration, _) = CalibrationScript.run(script.inputs(tiltAfterWalking: 2))
        let result = try #require(calibration.result)
        #expect(!result.succeeded)
        #expect(result.reason.contains("upright"))
        #expect(calibration.step == .aborted)
    }

    @Test func aBriefTiltShorterThanTheDwellIsTolerated() throws {
        var options = Calibration.Options()
        options.flipBandDwellSeconds = 2
        let (calibration, _) = CalibrationScript.run(CalibrationScript().inputs(tiltAfterWalking: 2), options: options)
        #expect(try #require(calibration.result).succeeded)
    }

    @Test func standingStillCollectsNothing() {
        var calibration = Calibration()
        var t = 0.0
        _ = calibration.update(.heading(HeadingSample(timeSeconds: t, headingDegrees: 0)))
        for _ in 0..<600 {
            t += 0.1
            _ = calibration.update(.speed(timeSeconds: t, metersPerSecond: 0))
            _ = calibration.update(.heading(HeadingSample(timeSeconds: t, headingDegrees: 45)))
        }
        #expect(calibration.step == .move)
        #expect(calibration.result == nil)
    }

    @Test func samplesGoingBackInTimeAreIgnored() {
        var calibration = Calibration()
        _ = calibration.update(.heading(HeadingSample(timeSeconds: 10, headingDegrees: 90)))
        let out = calibration.update(.heading(HeadingSample(timeSeconds: 5, headingDegrees: 0)))
        #expect(out.isEmpty)
        #expect(calibration.step == .findNorth)
    }
}

infix operator |> : AdditionPrecedence
func |> <A, B>(value: A, function: (A) throws -> B) rethrows -> B { try function(value) }

extension CalibrationTests {
    /// A walker who stops at the north window's edge faces there, not north: the offset is taken from the way the
    /// flat phone said they faced (the north window's 10° would otherwise all go into the offset).
    @Test(arguments: [0.6, 1.5]) func theOffsetIsFromTheWayTheWalkerFaced(holdSeconds: Double) throws {
        let script = CalibrationScript(pocketOffset: 73, holdSeconds: holdSeconds)
        let (calibration, _) = CalibrationScript.run(script.inputs())
        let result = try #require(calibration.result)
        #expect(result.succeeded)
        #expect(Angle.separation(result.offsetDegrees, 73) < 1.5, "offset \(result.offsetDegrees)")
    }

    /// Without the phone's tilt, only the first half second after north is found says the facing: a phone going
    /// into the pocket later must not be taken for the hand's.
    @Test func withoutTiltOnlyTheFirstHalfSecondSaysTheFacing() throws {
        let inputs = CalibrationScript(pocketOffset: 73, holdSeconds: 0.6).inputs().filter {
            if case .attitude = $0 { false } else { true }
        }
        let (calibration, _) = CalibrationScript.run(inputs)
        let result = try #require(calibration.result)
        #expect(result.succeeded)
        #expect(Angle.separation(result.offsetDegrees, 73) < 1.5, "offset \(result.offsetDegrees)")
    }
}

extension CalibrationTests {
    /// A pocket that holds the phone as flat as the hand: the phone leaving the hand is told by its turn out of the north
    /// window, and its headings in the pocket are not taken for the way the walker faced.
    @Test func aPocketThatHoldsThePhoneFlatIsToldByItsTurn() throws {
        let script = CalibrationScript(pocketOffset: 73, pocketPitch: 5, holdSeconds: 0.6)
        let (calibration, _) = CalibrationScript.run(script.inputs())
        let result = try #require(calibration.result)
        #expect(result.succeeded)
        #expect(Angle.separation(result.offsetDegrees, 73) < 1.5, "offset \(result.offsetDegrees)")
    }
}
