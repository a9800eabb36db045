import Testing
@testable import PinStore

/// Apple platforms add the system's revocation policy to `SecTrust` for a host under an
/// enforcing CRL mode (PinStore+URLAuthenticationChallenge.swift). The `SecTrust` half runs only
/// on a Mac; the mode-to-flags mapping it uses is checked here, with Security's flag values
/// (`SecPolicy.h`: OCSP 1 << 0, CRL 1 << 1, require a positive response 1 << 3).
@Suite struct SystemRevocationPolicyTests {
    @Test func offAndReportOnlyAddNoSystemPolicy() {
        // The system's policy can only refuse: report-only must never become a refusal.
        #expect(SystemRevocationPolicy.flags(for: .off) == nil)
        #expect(SystemRevocationPolicy.flags(for: .reportOnly) == nil)
    }

    @Test func enforceAsksForOCSPAndCRLsWithoutRequiringAnAnswer() throws {
        let flags = try #require(SystemRevocationPolicy.flags(for: .enforceSoftFail))
        #expect(flags & (1 << 0) != 0, "OCSP method")
        #expect(flags & (1 << 1) != 0, "CRL method")
        #expect(flags & (1 << 3) == 0, "enforce fails open when the CA does not answer")
    }

    @Test func hardFailRequiresAPositiveResponse() throws {
        let flags = try #require(SystemRevocationPolicy.flags(for: .enforceHardFail))
        #expect(flags & (1 << 0 | 1 << 1) == 1 << 0 | 1 << 1)
        #expect(flags & (1 << 3) != 0, "hard fail: no answer is a failure")
    }
}
