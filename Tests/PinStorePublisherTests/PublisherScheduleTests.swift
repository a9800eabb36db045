import Foundation
import Testing
@testable import PinStorePublisher

@Suite struct PublisherScheduleTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func everyPartnerIsProbedAtStartThenACycleRuns() {
        var schedule = PublisherSchedule(partners: ["b", "a"], start: Self.start, probeInterval: 600, cycleInterval: 600)
        #expect(schedule.nextAction(at: Self.start) == .probe(["a", "b"]))
        schedule.probed(["a", "b"], at: Self.start)
        #expect(schedule.nextAction(at: Self.start) == .cycle)
        schedule.cycled(at: Self.start, succeeded: true)
        #expect(schedule.nextAction(at: Self.start) == .sleep(until: Self.start + 600))
    }

    @Test func aFailedCycleIsRetriedSoonerThenBacksOff() {
        var schedule = PublisherSchedule(partners: [], start: Self.start, probeInterval: 3_600, cycleInterval: 3_600)
        schedule.cycled(at: Self.start, succeeded: false)
        #expect(schedule.nextAction(at: Self.start) == .sleep(until: Self.start + 60))
        schedule.cycled(at: Self.start + 60, succeeded: false)
        #expect(schedule.nextAction(at: Self.start + 60) == .sleep(until: Self.start + 180))
        schedule.cycled(at: Self.start + 180, succeeded: true)
        #expect(schedule.nextAction(at: Self.start + 180) == .sleep(until: Self.start + 3_780))
    }
}

@Suite struct RequestedProbeTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func aRequestedProbeIsDueAtOnce() {
        var schedule = PublisherSchedule(partners: ["a", "b"], start: Self.start, probeInterval: 600, cycleInterval: 600)
        schedule.probed(["a", "b"], at: Self.start)
        schedule.cycled(at: Self.start, succeeded: true)
        #expect(schedule.requestProbe(["a"], at: Self.start + 100, minimumGap: 30) == ["a"])
        #expect(schedule.nextAction(at: Self.start + 100) == .probe(["a"]))
    }

    @Test func aPartnerProbedWithinTheGapIsProbedWhenTheGapEndsNotAtOnce() {
        var schedule = PublisherSchedule(partners: ["a"], start: Self.start, probeInterval: 600, cycleInterval: 600)
        schedule.probed(["a"], at: Self.start)
        schedule.cycled(at: Self.start, succeeded: true)
        #expect(schedule.requestProbe(["a"], at: Self.start + 10, minimumGap: 30).isEmpty)
        // The swap a report names may have happened after that probe: it is not dropped.
        #expect(schedule.nextAction(at: Self.start + 10) == .sleep(until: Self.start + 30))
        #expect(schedule.nextAction(at: Self.start + 30) == .probe(["a"]))
        // And more requests within the gap make no second probe.
        #expect(schedule.requestProbe(["a"], at: Self.start + 20, minimumGap: 30).isEmpty)
        schedule.probed(["a"], at: Self.start + 30)
        schedule.cycled(at: Self.start + 30, succeeded: true)
        #expect(schedule.nextAction(at: Self.start + 31) == .sleep(until: Self.start + 630))
    }

    @Test func aPartnerNotInTheFileIsNeverProbedOnRequest() {
        var schedule = PublisherSchedule(partners: ["a"], start: Self.start, probeInterval: 600, cycleInterval: 600)
        #expect(schedule.requestProbe(["elsewhere"], at: Self.start, minimumGap: 30).isEmpty)
    }
}
