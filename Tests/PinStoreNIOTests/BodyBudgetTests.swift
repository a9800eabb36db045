#if canImport(FoundationNetworking)
import PinStore
@testable import PinStoreNIO
import Testing

/// The session-wide budget for buffered (completion-handler) bodies.
@Suite struct BodyBudgetTests {
    @Test func reservationsWithinTheBudgetAreGrantedAndCounted() {
        let budget = BodyBudget(limits: PinnedTransportLimits(bufferedBodyBudget: 1_000))
        #expect(budget.reserve(400, holding: 0) == nil)
        #expect(budget.reserve(600, holding: 0) == nil)
        #expect(budget.inUse == 1_000)
        #expect(budget.peak == 1_000)
    }

    @Test func reservationPastTheBudgetIsRefusedAndTakesNothing() {
        let budget = BodyBudget(limits: PinnedTransportLimits(bufferedBodyBudget: 1_000))
        #expect(budget.reserve(700, holding: 0) == nil)
        #expect(budget.reserve(301, holding: 0) == .bufferedBodyBudgetExceeded(budget: 1_000))
        #expect(budget.inUse == 700)
    }

    @Test func releasedBytesCanBeReservedAgain() {
        let budget = BodyBudget(limits: PinnedTransportLimits(bufferedBodyBudget: 1_000))
        #expect(budget.reserve(1_000, holding: 0) == nil)
        budget.release(1_000)
        #expect(budget.reserve(1_000, holding: 0) == nil)
        #expect(budget.peak == 1_000)
    }

    @Test func oneResponseLargerThanTheBudgetIsRefusedAsOverTheBudget() {
        let budget = BodyBudget(limits: PinnedTransportLimits(bufferedBodyBudget: 1_000))
        #expect(budget.reserve(10, holding: 995) == .bufferedBodyBudgetExceeded(budget: 1_000))
    }

    @Test func oneResponseIsCappedAtTheFixedMaximumUnderALargeBudget() {
        let budget = BodyBudget(limits: PinnedTransportLimits(bufferedBodyBudget: 4 << 30))
        let maximum = PinnedTransportLimits.maximumBufferedBodySize
        #expect(budget.reserve(2, holding: maximum - 1) == .responseTooLarge(limit: maximum))
        #expect(budget.inUse == 0)
    }

    @Test func defaultBudgetIs256MiB() {
        #expect(PinnedTransportLimits().bufferedBodyBudget == 256 << 20)
    }
}
#endif
