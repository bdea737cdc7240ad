import NavCore
import Testing
import HapticLogic

@Suite struct GuidanceTests {
    private func target(_ bearing: Double, kind: TargetKind = .lookAhead, route: UInt32 = 1) -> GuidanceTarget {
        GuidanceTarget(
            timeSeconds: 0, routeID: route, coordinate: Coordinate(latitude: 0, longitude: 0),
            bearingDegrees: bearing, distanceMeters: 30, kind: kind)
    }

    /// Feeds one heading for `seconds` at 10 Hz; returns every cue sent.
    private func hold(
        _ guidance: inout Guidance, heading: Double, target: GuidanceTarget?, from t: inout Double,
        seconds: Double
    ) -> [HapticCue] {
        var cues: [HapticCue] = []
        let end = t + seconds
        while t < end - 1e-9 {
            if let cue = guidance.update(
                heading: HeadingSample(timeSeconds: t, headingDegrees: heading), target: target)
            {
                cues.append(cue)
            }
            t += 0.1
        }
        return cues
    }

    @Test(arguments: [(350.0, 10.0, 20.0), (10, 350, -20), (359, 1, 2), (1, 359, -2), (0, 180, 180), (90, 270, 180)])
    func deviationAcrossNorth(_ heading: Double, _ bearing: Double, _ expected: Double) {
        #expect(abs(Guidance().deviation(rawHeading: heading, targetBearing: bearing) - expected) < 1e-9)
    }

    @Test func theOffsetIsSubtractedAndWrapped() {
        var options = Guidance.Options()
        options.offsetDegrees = 80
        let guidance = Guidance(options: options)
        #expect(abs(guidance.trueHeading(raw: 30) - 310) < 1e-9)
        #expect(abs(guidance.deviation(rawHeading: 30, targetBearing: 320) - 10) < 1e-9)
    }

    @Test func silentInsideTheToleranceAcrossNorth() {
        var guidance = Guidance()
        var t = 0.0
        for heading in [350.0, 355, 0, 5, 358, 2] {
            // Silence may be re-sent each repeat period; nothing else may be.
            let cues = self.hold(&guidance, heading: heading, target: self.target(3), from: &t, seconds: 1)
            #expect(cues.allSatisfy { $0.kind == .silent })
        }
    }

    @Test func intensityRisesLinearlyFromTheToleranceTo180() {
        let guidance = Guidance()
        #expect(guidance.immediateCue(deviation: 15, at: 0).kind == .silent)
        let justOutside = guidance.immediateCue(deviation: 15.01, at: 0)
        #expect(justOutside.kind == .turnRight && abs(justOutside.intensity - 0.2) < 0.001)
        let mid = guidance.immediateCue(deviation: -97.5, at: 0)
        #expect(mid.kind == .turnLeft && abs(mid.intensity - 0.6) < 1e-9)
        #expect(guidance.immediateCue(deviation: 180, at: 0).intensity == 1)
        var last = 0.0
        for d in stride(from: 16.0, through: 180, by: 4) {
            let i = guidance.immediateCue(deviation: d, at: 0).intensity
            #expect(i > last)
            last = i
        }
    }

    @Test func turnAroundBeyond120Degrees() {
        let guidance = Guidance()
        #expect(guidance.immediateCue(deviation: 119, at: 0).kind == .turnRight)
        #expect(guidance.immediateCue(deviation: 121, at: 0).kind == .turnAround)
        #expect(guidance.immediateCue(deviation: -150, at: 0).kind == .turnAround)
    }

    @Test func theRightSideAcrossTheWrap() {
        var guidance = Guidance()
        var t = 0.0
        // Heading 350°, target 60°: turn right 70°.
        let right = self.hold(&guidance, heading: 350, target: self.target(60), from: &t, seconds: 1)
        #expect(right.last?.kind == .turnRight)
        var guidance2 = Guidance()
        var t2 = 0.0
        // Heading 20°, target 300°: turn left 80°.
        let left = self.hold(&guidance2, heading: 20, target: self.target(300), from: &t2, seconds: 1)
        #expect(left.last?.kind == .turnLeft)
    }

    @Test func aCueStartsOnlyAfterTheDebounceTime() {
        var guidance = Guidance()
        var t = 0.0
        #expect(self.hold(&guidance, heading: 0, target: self.target(40), from: &t, seconds: 0.25).isEmpty)
        let cues = self.hold(&guidance, heading: 0, target: self.target(40), from: &t, seconds: 0.2)
        #expect(cues.count == 1 && cues[0].kind == .turnRight)
        // A blip shorter than the debounce never starts a cue.
        var g2 = Guidance()
        var t2 = 0.0
        _ = self.hold(&g2, heading: 0, target: self.target(0), from: &t2, seconds: 1)
        #expect(
            self.hold(&g2, heading: 30, target: self.target(0), from: &t2, seconds: 0.2).allSatisfy {
                $0.kind == .silent
            })
        #expect(
            self.hold(&g2, heading: 0, target: self.target(0), from: &t2, seconds: 1).allSatisfy { $0.kind == .silent })
    }

    @Test func aCueEndsOnlyInsideTheReleaseBand() {
        var guidance = Guidance()
        var t = 0.0
        _ = self.hold(&guidance, heading: 0, target: self.target(40), from: &t, seconds: 1)
        // 12° off: inside the 15° tolerance but not inside 15 − 5 = 10°: still a (weakest) cue.
        let still = self.hold(&guidance, heading: 28, target: self.target(40), from: &t, seconds: 1)
        #expect(guidance.current?.kind == .turnRight)
        #expect(still.allSatisfy { $0.kind == .turnRight })
        let stop = self.hold(&guidance, heading: 32, target: self.target(40), from: &t, seconds: 0.5)
        #expect(stop.last?.kind == .silent)
    }

    @Test func aTurnAroundLastsUntilTheDeviationIsWellInsideItsThreshold() {
        var guidance = Guidance()
        var t = 0.0
        _ = self.hold(&guidance, heading: 0, target: self.target(125), from: &t, seconds: 1)
        #expect(guidance.current?.kind == .turnAround)
        // Turning in place, the heading jitters about the threshold: 115° and 119° off stay a turn-around…
        for heading in [10.0, 6, 10, 6] {
            _ = self.hold(&guidance, heading: heading, target: self.target(125), from: &t, seconds: 0.3)
            #expect(guidance.current?.kind == .turnAround, "\(heading)")
        }
        // …until 120 − 15 = 105° or less: then the side.
        _ = self.hold(&guidance, heading: 25, target: self.target(125), from: &t, seconds: 0.5)
        #expect(guidance.current?.kind == .turnRight)
        // With no release, 119° off is a side at once.
        var options = Guidance.Options()
        options.turnAroundReleaseDegrees = 0
        var plain = Guidance(options: options)
        t = 0
        _ = self.hold(&plain, heading: 0, target: self.target(125), from: &t, seconds: 1)
        _ = self.hold(&plain, heading: 6, target: self.target(125), from: &t, seconds: 0.5)
        #expect(plain.current?.kind == .turnRight)
    }

    @Test func atMostTenChangesASecond() {
        var guidance = Guidance()
        var t = 0.0
        _ = self.hold(&guidance, heading: 0, target: self.target(100), from: &t, seconds: 1)
        // Sweep the deviation fast at 100 Hz: the intensity changes every sample.
        var sent: [Double] = []
        for step in 0..<100 {
            let time = t + Double(step) * 0.01
            let heading = Double(step % 2 == 0 ? 0 : 60)
            if let cue = guidance.update(
                heading: HeadingSample(timeSeconds: time, headingDegrees: heading), target: self.target(100))
            {
                sent.append(cue.timeSeconds)
            }
        }
        #expect(sent.count <= 11)
        #expect(zip(sent, sent.dropFirst()).allSatisfy { $1 - $0 >= 0.1 - 1e-9 })
    }

    @Test func anUnchangedCueIsRepeatedAfterTheRepeatPeriodOnly() {
        var guidance = Guidance()
        var t = 0.0
        let cues = self.hold(&guidance, heading: 0, target: self.target(60), from: &t, seconds: 5)
        // Start at 0.3 s, then repeats at 2.3 s and 4.3 s.
        #expect(cues.count == 3)
    }

    @Test func arrivalPlaysOncePerRoute() {
        var guidance = Guidance()
        var t = 0.0
        let cues = self.hold(&guidance, heading: 0, target: self.target(0, kind: .arrived), from: &t, seconds: 5)
        #expect(cues.filter { $0.kind == .arrival }.count == 1)
        let next = self.hold(
            &guidance, heading: 0, target: self.target(0, kind: .arrived, route: 2), from: &t, seconds: 1)
        #expect(next.filter { $0.kind == .arrival }.count == 1)
    }

    @Test func noTargetMeansSilence() {
        var guidance = Guidance()
        var t = 0.0
        _ = self.hold(&guidance, heading: 0, target: self.target(90), from: &t, seconds: 1)
        let cues = self.hold(&guidance, heading: 0, target: nil, from: &t, seconds: 0.5)
        #expect(cues.first?.kind == .silent)
    }

    @Test func theToleranceIsClampedTo5Through45() {
        var options = Guidance.Options()
        options.toleranceDegrees = 2
        #expect(Guidance(options: options).options.toleranceDegrees == 5)
        options.toleranceDegrees = 90
        #expect(Guidance(options: options).options.toleranceDegrees == 45)
    }
}
