import NavCore
import Testing
import MapLogic

@Suite struct ProviderScheduleTests {
    @Test func providersAreAskedInTheConfiguredOrderUntilOneFails() {
        let schedule = ProviderSchedule(names: ["valhalla", "osrm", "osm"])
        #expect(schedule.order(at: 0) == [0, 1, 2])
    }

    @Test func aFailedProviderGoesLastUntilItsBackoffEndsAndTheBackoffDoubles() {
        var schedule = ProviderSchedule(
            names: ["valhalla", "osm"], options: .init(backoffSeconds: 5, maximumBackoffSeconds: 12))
        #expect(schedule.failed(0, at: 100) == 5)
        #expect(schedule.order(at: 104.9) == [1, 0], "backing off: asked last, not dropped")
        #expect(schedule.isBackingOff(0, at: 104.9))
        #expect(schedule.order(at: 105) == [0, 1], "first again when the backoff ends")
        #expect(schedule.failed(0, at: 105) == 10, "doubles with a second failure in a row")
        #expect(schedule.failed(0, at: 115) == 12, "up to the limit")
        #expect(schedule.failed(0, at: 127) == 12)
        schedule.succeeded(0)
        #expect(schedule.order(at: 128) == [0, 1])
        #expect(schedule.failed(0, at: 130) == 5, "an answer resets the doubling")
    }

    @Test func whenEveryProviderBacksOffAllAreStillAskedInOrder() {
        var schedule = ProviderSchedule(names: ["valhalla", "osrm", "osm"])
        schedule.failed(2, at: 0)
        schedule.failed(0, at: 0)
        #expect(schedule.order(at: 1) == [1, 0, 2])
        schedule.failed(1, at: 1)
        #expect(schedule.order(at: 2) == [0, 1, 2])
    }
}
