@testable import PinStoreAsyncHTTPClient
import Testing

// A code a later release adds, made here through the internal initialiser (README, "Versions
// and API stability"): the client below was written the documented way before it existed.
extension PinnedHTTPClientError.Code {
    static let proxyWithoutTLSForTest = Self("proxyWithoutTLSForTest")
}

@Suite struct PinnedHTTPClientErrorEvolutionTests {
    /// A client of the documented pattern: a `switch` over the code, with a `default`.
    private func fix(_ code: PinnedHTTPClientError.Code) -> String {
        switch code {
        case .certificateVerificationDisabled, .hostnameVerificationDisabled: "use .fullVerification"
        case .unencryptedConnection: "use https"
        default: "read the reason"
        }
    }

    @Test func aConfigurationErrorAddedLaterFallsToTheDefaultOfADocumentedSwitch() {
        #expect(fix(.hostnameVerificationDisabled) == "use .fullVerification")
        #expect(fix(.unencryptedConnection) == "use https")
        #expect(fix(.invalidTrustRoots) == "read the reason")
        #expect(fix(.proxyWithoutTLSForTest) == "read the reason")
        #expect(PinnedHTTPClientError.Code.noPeerCertificate.name == "noPeerCertificate")
    }
}
