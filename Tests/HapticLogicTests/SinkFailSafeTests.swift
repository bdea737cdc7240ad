import NavCore
import Testing
import HapticLogic

@Suite struct SinkFailSafeTests {
    @Test func guidanceStartsWhenBothInputsAreFreshAndStopsWhenEitherIsStale() {
        var failSafe = SinkFailSafe(options: .init(staleAfterSeconds: 1))
        #expect(failSafe.heading(currentAt: 10, now: 10) == nil, "no target yet: still silent, nothing to play")
        #expect(failSafe.target(currentAt: 10, now: 10) == .resume)
        #expect(failSafe.evaluate(now: 10.9) == nil)
        #expect(failSafe.heading(currentAt: 10.9, now: 10.9) == nil)
        #expect(failSafe.evaluate(now: 11.0) == .silence(reason: "no guidance for 1.0 s", playSignalLost: true))
        #expect(failSafe.isSilent)
    }

    /// When the sink must look again without new input: when live input goes stale (the late one first), and when a
    /// loss re-arms; never while silent, where only input changes anything.
    @Test func theNextDeadlineIsWhenLiveInputGoesStaleOrALossReArms() {
        var failSafe = SinkFailSafe(options: .init(staleAfterSeconds: 1, headingStaleAfterSeconds: 0.5))
        #expect(failSafe.nextDeadline == nil, "silent, waiting for input")
        _ = failSafe.heading(currentAt: 10, now: 10)
        #expect(failSafe.nextDeadline == nil, "a heading alone: still silent")
        #expect(failSafe.target(currentAt: 9.8, now: 10) == .resume)
        #expect(failSafe.nextDeadline == 10.5, "the heading's own limit first")
        _ = failSafe.heading(currentAt: 10.6, now: 10.6)
        #expect(failSafe.nextDeadline == 10.8, "then the guidance, 0.2 s late on arrival")
        // Stale at its deadline, not before: a loss opens, and it re-arms once guidance has been live again for the
        // re-arm time (1 s, the longer limit).
        #expect(failSafe.evaluate(now: 10.799) == nil)
        #expect(failSafe.evaluate(now: 10.8) == .silence(reason: "no guidance for 1.0 s", playSignalLost: true))
        #expect(failSafe.nextDeadline == nil)
        _ = failSafe.heading(currentAt: 12, now: 12)
        #expect(failSafe.target(currentAt: 12, now: 12) == .resume)
        #expect(failSafe.nextDeadline == 12.5, "the heading goes stale before the loss re-arms")
        for tick in 1...9 {
            let now = 12 + Double(tick) * 0.1
            _ = failSafe.heading(currentAt: now, now: now)
            _ = failSafe.target(currentAt: now, now: now)
        }
        #expect(failSafe.nextDeadline == 13, "the re-arm, before the input at 12.9 goes stale")
        #expect(failSafe.evaluate(now: 13) == nil)
        #expect(failSafe.nextDeadline == 13.4, "re-armed: only staleness is left")
        #expect(failSafe.evaluate(now: 13.4) == .silence(reason: "no heading for 0.5 s", playSignalLost: true))
    }

    @Test func aLateMessageCountsItsLatenessAgainstTheLimit() {
        var failSafe = SinkFailSafe(options: .init(staleAfterSeconds: 1))
        _ = failSafe.heading(currentAt: 9.2, now: 10)  // arrived at 10 but 0.8 s late
        #expect(failSafe.target(currentAt: 10, now: 10) == .resume)
        #expect(failSafe.evaluate(now: 10.25) == .silence(reason: "no heading for 1.1 s", playSignalLost: true))
    }

    @Test func signalLostPlaysOncePerLossHoweverTheLossEnds() {
        var failSafe = SinkFailSafe(options: .init(staleAfterSeconds: 1))
        var plays = 0
        func count(_ transition: SinkFailSafe.Transition?) {
            if case .silence(_, true) = transition { plays += 1 }
        }
        count(failSafe.heading(currentAt: 0, now: 0))
        count(failSafe.target(currentAt: 0, now: 0))
        // The upstream pauses: stale, then the publisher is lost too.
        count(failSafe.evaluate(now: 1.0))
        count(failSafe.publisherLost("source", now: 1.2))
        // It resumes: a burst of fresh input, then a hiccup shorter than the re-arm time, then steady input.
        count(failSafe.heading(currentAt: 5, now: 5))
        count(failSafe.target(currentAt: 5, now: 5))
        count(failSafe.evaluate(now: 6.05))
        count(failSafe.heading(currentAt: 6.1, now: 6.1))
        count(failSafe.target(currentAt: 6.1, now: 6.1))
        #expect(plays == 1, "one loss, one signal-lost cue")
        #expect(!failSafe.isSilent)
        // Steady for longer than the re-arm time: the next loss is a new one and plays again.
        for tick in 1...30 {
            let now = 6.1 + Double(tick) * 0.1
            count(failSafe.heading(currentAt: now, now: now))
            count(failSafe.target(currentAt: now, now: now))
        }
        count(failSafe.publisherLost("route", now: 9.2))
        #expect(plays == 2)
        #expect(failSafe.silenceReason == "route is gone")
        #expect(failSafe.signalLostCount == 2)
    }

    @Test func aLostPublisherMakesEverythingBeforeItStale() {
        var failSafe = SinkFailSafe(options: .init(staleAfterSeconds: 1))
        _ = failSafe.heading(currentAt: 0, now: 0)
        _ = failSafe.target(currentAt: 0, now: 0)
        #expect(failSafe.publisherLost("route", now: 0.5) == .silence(reason: "route is gone", playSignalLost: true))
        #expect(failSafe.heading(currentAt: 0.6, now: 0.6) == nil, "a heading alone does not resume guidance")
        #expect(failSafe.target(currentAt: 0.7, now: 0.7) == .resume)
    }
}
