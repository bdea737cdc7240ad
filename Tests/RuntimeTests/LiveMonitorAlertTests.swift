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
}
