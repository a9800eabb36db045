import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import PinStore

/// `PinningFailure(unwrapping:)` finds the refusal however an adapter or a library wrapped it,
/// and the one-line forms of decisions and events stay on one line.
@Suite struct PinningFailureUnwrappingTests {
    static let failure = PinningFailure(host: "api.example.com", reason: .pinMismatch,
                                        details: "  Validated certificate chain (leaf first):\n    sha256/AAAA=: CN=api.example.com")

    /// A library's wrapper that keeps the error in a stored property (as OpenAPIRuntime's ClientError does).
    struct Wrapper: Error {
        let operation: String
        let underlyingError: any Error
    }

    struct Unrelated: Error {}

    @Test func theFailureItselfIsFound() {
        #expect(PinningFailure(unwrapping: Self.failure) == Self.failure)
    }

    @Test func aURLErrorsUnderlyingFailureIsFound() {
        let error = URLError(.serverCertificateUntrusted, userInfo: [NSUnderlyingErrorKey: Self.failure])
        #expect(PinningFailure(unwrapping: error) == Self.failure)
    }

    @Test func aFailureStoredInAWrapperIsFound() {
        let error = Wrapper(operation: "getItems",
                            underlyingError: URLError(.serverCertificateUntrusted, userInfo: [NSUnderlyingErrorKey: Self.failure]))
        #expect(PinningFailure(unwrapping: error)?.reason == .pinMismatch)
    }

    @Test func anErrorWithoutAFailureIsNil() {
        #expect(PinningFailure(unwrapping: Unrelated()) == nil)
        #expect(PinningFailure(unwrapping: URLError(.timedOut)) == nil)
        #expect(PinningFailure(unwrapping: Wrapper(operation: "x", underlyingError: Unrelated())) == nil)
    }

    @Test func theSearchStopsAFewLevelsDown() {
        var error: any Error = Self.failure
        for _ in 0..<6 { error = Wrapper(operation: "x", underlyingError: error) }
        #expect(PinningFailure(unwrapping: error) == nil)
    }

    @Test func aDeniedDecisionEventIsOneLine() {
        let event = PinningEvent(host: "api.example.com", decision: .deny(Self.failure), date: Date(timeIntervalSince1970: 0))
        #expect(!"\(event)".contains("\n"))
        #expect("\(event)".hasPrefix("api.example.com: denied: "))
        #expect(!"\(event.decision)".contains("\n"))
    }

    @Test func aReportOnlyDecisionIsOneLine() {
        let decision = PinningDecision.reportOnly(Self.failure, validatedChain: [])
        #expect(!"\(decision)".contains("\n"))
        #expect("\(decision)".contains("report-only"))
    }
}
