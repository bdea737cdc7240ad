@testable import SessionTools
import Bus
import NavCore
import Runtime
import Testing

@Suite struct LiveMonitorAlertTests {
    private func received(_ message: BusMessage) -> BusEvent {
        .message(
            ReceivedMessage(
                header: EnvelopeHeader(
                    typeID: message.kind.rawValue, sequence: 1, sendTimeNanoseconds: 0, stage: "haptic"),
                message: message, endpoint: "ipc://x", receiveTimeNanoseconds: 0, receiveMonotonicNanoseconds: 0))
    }

    /// A stop in force heads the live screen, with who stopped the outputs and why, until a resume; marks change
    /// nothing.
    @Test func aConditionLockStopHeadsTheScreenUntilResumed() {
        var monitor = LiveMonitor(stages: ["haptic"])
        func alert() -> String { monitor.render(now: 1, title: "t", counters: SubscriberCounters())[1] }
        #expect(alert() == "")
        monitor.update(
            self.received(
                .control(
                    ControlEvent(
                        timeSeconds: 1, command: .stop, text: "band lost; the condition allows no other device",
                        sender: "condition-lock", requestID: "", sentSeconds: 1, stopped: true))), now: 1)
        #expect(
            alert()
                == "!!! EVERY OUTPUT STOPPED by condition-lock: band lost; the condition allows no other device; `r` resumes"
        )
        monitor.update(
            self.received(
                .control(
                    ControlEvent(
                        timeSeconds: 2, command: .mark, text: "x", sender: "experimenter", requestID: "m",
                        sentSeconds: 2, stopped: true))), now: 2)
        #expect(alert().hasPrefix("!!! EVERY OUTPUT STOPPED by condition-lock"))
        monitor.update(
            self.received(
                .control(
                    ControlEvent(
                        timeSeconds: 3, command: .resume, sender: "experimenter", requestID: "r", sentSeconds: 3,
                        stopped: false))), now: 3)
        #expect(alert() == "")
    }

    /// The live screen's last line is the latest turn event in words, with its phase, route, manoeuvre and sender.
    @Test func theLatestTurnEventIsOnTheScreenInWords() throws {
        var monitor = LiveMonitor(stages: ["haptic"])
        func turnLine() -> String? {
            monitor.render(now: 1, title: "t", counters: SubscriberCounters()).last
        }
        #expect(turnLine() == "turn       –")
        let example = try #require(
            BusMessage.examples.compactMap { message -> TurnEvent? in
                if case let .turn(event) = message { return event }
                return nil
            }.first)
        monitor.update(self.received(.turn(example)), now: 1)
        #expect(
            turnLine()
                == "turn       Second right onto Rue Grimaldi, in 85 metres  (announce, route 2 manoeuvre 0, from haptic)"
        )
    }

    /// A monitor started after the stop learns it from the sink's status (its `stopped` counter), and a status that
    /// says guiding again clears it.
    @Test func aStopMadeBeforeTheMonitorStartedComesFromTheSinksStatus() {
        var monitor = LiveMonitor(stages: ["haptic"])
        func alert() -> String { monitor.render(now: 1, title: "t", counters: SubscriberCounters())[1] }
        func status(_ message: String, stopped: UInt64) -> BusMessage {
            .status(
                StageStatus(
                    timeSeconds: 1, stage: "haptic", health: .degraded, message: message,
                    counters: [StatusCounter(name: "stopped", value: stopped)]))
        }
        monitor.update(
            self.received(
                status("stopped by experimenter (experimenter); every output silent until resumed", stopped: 1)),
            now: 1)
        #expect(alert().hasPrefix("!!! EVERY OUTPUT STOPPED by experimenter (experimenter)"), "\(alert())")
        monitor.update(self.received(status("guiding on band", stopped: 0)), now: 2)
        #expect(alert() == "")
    }
}
