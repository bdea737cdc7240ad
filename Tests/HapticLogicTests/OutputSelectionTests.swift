import NavCore
import Testing
import HapticLogic

@Suite struct OutputSelectionTests {
    @Test func theFirstAvailableDeviceIsChosenAndEachMoveIsReportedOnce() {
        var selection = OutputSelection()
        // band, speaker, console
        #expect(selection.choose(available: [false, false, false]) == nil, "nothing yet, nothing changes")
        #expect(selection.choose(available: [true, true, true]) == .init(from: nil, to: 0))
        #expect(selection.choose(available: [true, false, true]) == nil, "the band still answers")
        let fallback = selection.choose(available: [false, true, true])
        #expect(fallback == .init(from: 0, to: 1))
        #expect(fallback?.degraded == true)
        #expect(selection.choose(available: [false, true, true]) == nil)
        #expect(selection.choose(available: [false, false, false]) == .init(from: 1, to: nil))
        let back = selection.choose(available: [true, true, true])
        #expect(back == .init(from: nil, to: 0))
        #expect(back?.degraded == false)
        #expect(selection.active == 0)
    }
}
