import NavCore
import Testing

@Suite struct InputTimeGuardTests {
    /// Feeds a stream of (measurement, received, sent) and returns the verdicts.
    private func run(
        _ guardian: inout InputTimeGuard, _ points: [(Double, Double, Double?)]
    ) -> [InputTimeGuard.Verdict] {
        points.map {
            guardian.admit(stream: "gps/fix", measurementSeconds: $0.0, receivedSeconds: $0.1, sentSeconds: $0.2)
        }
    }

    private func accepted(_ verdict: InputTimeGuard.Verdict) -> Bool {
        if case .drop = verdict { return false }
        return true
    }

    @Test func aFixDatedAnHourAheadIsDroppedAndTheNextOneIsUsed() {
        var guardian = InputTimeGuard()
        var points: [(Double, Double, Double?)] = []
        for index in 0..<15 {
            let second = Double(index)
            points.append((1000 + second + (index == 10 ? 3600 : 0), 50 + second, 1000 + second))
        }
        let verdicts = self.run(&guardian, points)
        #expect(verdicts[10] == .drop(.ahead))
        #expect(verdicts.enumerated().allSatisfy { $0.offset == 10 || self.accepted($0.element) })
        #expect(guardian.dropped[.ahead] == 1 && guardian.rebases == 0)
        #expect(guardian.dropSummary == "dropped 1 dated ahead of the stream")
    }

    @Test func aTimeLineThatReallyJumpedIsFollowedAfterOneMessage() {
        var guardian = InputTimeGuard()
        let before = (0..<5).map { (100.0 + Double($0), Double($0), Double?.none) }
        let after = (5..<9).map { (5000.0 + Double($0), Double($0), Double?.none) }  // a clock corrected forwards
        let back = (9..<12).map { (10.0 + Double($0), Double($0), Double?.none) }  // a replay that starts again
        let verdicts = self.run(&guardian, before + after + back)
        #expect(verdicts[5] == .drop(.ahead))
        #expect(verdicts[6] == .rebase(latenessSeconds: 0))
        #expect(verdicts[9] == .drop(.backwards))
        #expect(verdicts[10] == .rebase(latenessSeconds: 0))
        #expect(verdicts.filter { !self.accepted($0) }.count == 2)
    }

    @Test func aReplayTwentyTimesFasterAndALogPlayedAsFastAsPossiblePass() {
        var guardian = InputTimeGuard()
        let fast = (0..<200).map { (Double($0), Double($0) * 0.05, Double?.none) }
        #expect(self.run(&guardian, fast).allSatisfy(self.accepted))
        // A GPX track with a point every 5 s, all of it delivered within a few milliseconds: one lost at most.
        var batch = InputTimeGuard()
        let sparse = (0..<100).map { (Double($0) * 5, 10 + Double($0) * 0.0001, Double?.none) }
        #expect(self.run(&batch, sparse).filter { !self.accepted($0) }.count <= 1)
    }

    @Test func aBacklogDeliveredAfterACutIsLateAndLiveMessagesAreNot() {
        var guardian = InputTimeGuard()
        var points: [(Double, Double, Double?)] = []
        // 10 Hz headings; the sender's clock is 3 s ahead of the receiver's monotonic clock, transit 2 ms.
        for index in 0..<100 {
            points.append((Double(index) / 10, 7 + Double(index) / 10 + 0.002, 3 + 7 + Double(index) / 10))
        }
        // 30 s cut: the 300 messages sent during it all arrive together when it heals, then live ones.
        for index in 100..<400 {
            points.append((Double(index) / 10, 47.0 + Double(index - 100) * 1e-5, 10 + Double(index) / 10))
        }
        for index in 400..<420 {
            points.append((Double(index) / 10, 7 + Double(index) / 10 + 0.003, 10 + Double(index) / 10))
        }
        let verdicts = self.run(&guardian, points)
        #expect(verdicts[0..<100].allSatisfy(self.accepted))
        // The last ~2 s of the backlog are within the limit; everything older is dropped.
        #expect(verdicts[100..<370].allSatisfy { $0 == .drop(.late) })
        #expect(verdicts[400..<420].allSatisfy(self.accepted))
        #expect(guardian.rebases == 0)
    }

    @Test func aSenderWhoseClockWasSetBackIsFollowedWithinASecond() {
        var guardian = InputTimeGuard()
        var points: [(Double, Double, Double?)] = []
        for index in 0..<50 { points.append((Double(index) / 10, Double(index) / 10, Double(index) / 10)) }
        // The sender's wall clock steps back 10 s (its measurement times do not).
        for index in 50..<80 { points.append((Double(index) / 10, Double(index) / 10, Double(index) / 10 - 10)) }
        let verdicts = self.run(&guardian, points)
        let lost = verdicts[50...].prefix { !self.accepted($0) }.count
        #expect(lost >= 5 && lost <= 12, "\(lost) lost before the transit was re-based")
        #expect(verdicts[62...].allSatisfy(self.accepted))
        #expect(guardian.rebases == 1)
    }

    /// A stream of a fix a second whose sender's wall clock steps back 10 s is followed again after four fixes (a
    /// steady added delay would look the same, so it is not taken as current sooner), and a backlog of such fixes
    /// delivered at once after a 10 s pause re-bases nothing.
    @Test func aFixASecondStreamWhoseSendersClockWasSetBackIsFollowedAfterFourFixes() {
        var guardian = InputTimeGuard()
        var points: [(Double, Double, Double?)] = []
        for second in 0..<10 { points.append((Double(second), Double(second), Double(second))) }
        for second in 10..<20 { points.append((Double(second), Double(second), Double(second) - 10)) }
        let verdicts = self.run(&guardian, points)
        #expect(verdicts[10..<14].allSatisfy { $0 == .drop(.late) })
        #expect(verdicts[14...].allSatisfy(self.accepted))
        #expect(guardian.rebases == 1)

        var paused = InputTimeGuard()
        var backlog: [(Double, Double, Double?)] = []
        for second in 0..<10 { backlog.append((Double(second), Double(second), Double(second))) }
        // Fixes 10-19 held by a pause and delivered together at 20.001 s, then live ones.
        for second in 10..<20 { backlog.append((Double(second), 20 + Double(second) * 1e-4, Double(second))) }
        for second in 20..<25 { backlog.append((Double(second), Double(second) + 0.002, Double(second))) }
        let held = self.run(&paused, backlog)
        #expect(held[10..<18].allSatisfy { $0 == .drop(.late) })
        #expect(held[20...].allSatisfy(self.accepted))
        #expect(paused.rebases == 0)
    }

    @Test func timesThatAreNotNumbersAreDropped() {
        var guardian = InputTimeGuard()
        #expect(
            guardian.admit(stream: "s", measurementSeconds: .nan, receivedSeconds: 1, sentSeconds: nil)
                == .drop(.nonFinite))
        #expect(
            guardian.admit(stream: "s", measurementSeconds: .infinity, receivedSeconds: 1, sentSeconds: nil)
                == .drop(.nonFinite))
        #expect(
            self.accepted(guardian.admit(stream: "s", measurementSeconds: 5, receivedSeconds: 1, sentSeconds: .nan)))
    }
}

extension InputTimeGuardTests {
    @Test func aLostPublisherThatComesBackRestartedIsFollowedAtOnce() {
        var guardian = InputTimeGuard()
        for index in 0..<10 {
            _ = guardian.admit(
                stream: "route/target", measurementSeconds: 500 + Double(index), receivedSeconds: Double(index),
                sentSeconds: 1000 + Double(index))
        }
        guardian.forgetTimeLines(withPrefix: "route/")
        // Restarted: its simulated time starts over, its transit is as before.
        let verdict = guardian.admit(
            stream: "route/target", measurementSeconds: 3, receivedSeconds: 30, sentSeconds: 1030)
        #expect(verdict == .accept(latenessSeconds: 0))
        // A late one is still late: the transit baseline was kept.
        #expect(
            guardian.admit(stream: "route/target", measurementSeconds: 4, receivedSeconds: 40, sentSeconds: 1031)
                == .drop(.late))
    }
}

extension InputTimeGuardTests {
    @Test func aRepeatOfTheSameMeasurementIsAsOldAsItsFirstCopy() {
        var guardian = InputTimeGuard()
        _ = guardian.admit(stream: "route/target", measurementSeconds: 10, receivedSeconds: 100, sentSeconds: 900)
        // Sent again 0.25 s and 0.5 s later with no transit delay: 0.25 s and 0.5 s old.
        #expect(
            guardian.admit(stream: "route/target", measurementSeconds: 10, receivedSeconds: 100.25, sentSeconds: 900.25)
                == .accept(latenessSeconds: 0.25))
        #expect(
            guardian.admit(stream: "route/target", measurementSeconds: 10, receivedSeconds: 100.5, sentSeconds: 900.5)
                == .accept(latenessSeconds: 0.5))
        // The next measurement is fresh again.
        #expect(
            guardian.admit(stream: "route/target", measurementSeconds: 11, receivedSeconds: 101, sentSeconds: 901)
                == .accept(latenessSeconds: 0))
    }
}
