#if canImport(FoundationNetworking)
import Foundation
import NIOCore
@testable import PinStoreNIO
import Testing

/// A request's timeout as the pool takes it: any `TimeInterval` a user may set, infinity
/// included ("no timeout"), becomes a bounded amount instead of trapping.
@Suite struct RequestTimeoutTests {
    static let century = TimeAmount.nanoseconds(Int64(100 * 365 * 86_400) * 1_000_000_000)

    @Test func anInfiniteTimeoutIsACentury() {
        #expect(PinnedHTTPSTransport.requestTimeout(seconds: .infinity) == Self.century)
    }

    @Test func aNaNTimeoutIsACentury() {
        #expect(PinnedHTTPSTransport.requestTimeout(seconds: .nan) == Self.century)
    }

    @Test func aTimeoutBeyondWhatNanosecondsHoldIsACentury() {
        #expect(PinnedHTTPSTransport.requestTimeout(seconds: 1e12) == Self.century)
    }

    @Test func aZeroOrNegativeTimeoutIsAMillisecond() {
        #expect(PinnedHTTPSTransport.requestTimeout(seconds: 0) == .milliseconds(1))
        #expect(PinnedHTTPSTransport.requestTimeout(seconds: -5) == .milliseconds(1))
    }

    @Test func anOrdinaryTimeoutIsKept() {
        #expect(PinnedHTTPSTransport.requestTimeout(seconds: 30) == .seconds(30))
    }
}
#endif
