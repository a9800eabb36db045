import Foundation
@testable import PinStoreNIO
import Testing

// A cause a later release adds, made here through the internal initialiser (README, "Versions
// and API stability"): the client below was written the documented way before it existed.
extension PinnedTransportError.Code {
    static let trailersTooLargeForTest = Self("trailersTooLargeForTest")
}

@Suite struct TransportErrorEvolutionTests {
    /// A client of the documented pattern: a `switch` over the code, with a `default`.
    private func advice(_ code: PinnedTransportError.Code) -> String {
        switch code {
        case .responseTooLarge, .bufferedBodyBudgetExceeded: "stream the body"
        case .http2PushRefused: "server bug"
        default: "log"
        }
    }

    @Test func aTransportErrorAddedLaterFallsToTheDefaultOfADocumentedSwitch() {
        #expect(advice(PinnedTransportError.responseTooLarge(limit: 10).code) == "stream the body")
        #expect(advice(PinnedTransportError.http2PushRefused.code) == "server bug")
        #expect(advice(PinnedTransportError.http2GoAway(errorCode: "INTERNAL_ERROR").code) == "log")
        #expect(advice(.trailersTooLargeForTest) == "log")
    }

    @Test func whatATransportErrorCarriesIsReadThroughItsAccessors() {
        #expect(PinnedTransportError.bufferedBodyBudgetExceeded(budget: 256).limit == 256)
        #expect(PinnedTransportError.http2GoAway(errorCode: "ENHANCE_YOUR_CALM").detail == "ENHANCE_YOUR_CALM")
        #expect(PinnedTransportError.http2PushRefused.limit == nil)
        #expect(PinnedTransportError.responseTooLarge(limit: 1) != .responseTooLarge(limit: 2))
        // `case .responseHeadTooLarge:` on the error itself, whatever its limit.
        let matched = switch PinnedTransportError.responseHeadTooLarge(limit: 64) {
        case .responseHeadTooLarge: true
        default: false
        }
        #expect(matched)
    }
}
