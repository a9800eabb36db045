@testable import PinStore
import Foundation
import PinStoreTestSupport
import Testing

// What a later release adds, made here through the internal initialisers: a new member of
// each type that grows (README, "Versions and API stability"). The client functions below are
// written the documented way, before these members existed, and must keep compiling and
// answering through their `default`.
extension PinningFailure.Reason.Code {
    static let revokedForTest = Self("revokedForTest")
}
extension PinStore.UpdateResult {
    static let rollbackRefusedForTest = Self("rollbackRefusedForTest")
}
extension PinStore.UpdateActivity {
    static let resumedForTest = Self("resumedForTest")
}
extension ChainValidationError.Reason {
    static let revokedForTest = Self("revokedForTest")
}
extension CertificateTransparencyViolation.Problem.Code {
    static let logDistrustedForTest = Self("logDistrustedForTest")
}
extension PinIdentity.Kind.Code {
    static let sha384KeyForTest = Self("sha384KeyForTest")
}

/// A client of the documented pattern: a `switch` over the code, with a `default`.
private func action(for code: PinningFailure.Reason.Code) -> String {
    switch code {
    case .pinMismatch: "alert"
    case .noPinsForHost: "update"
    case .deniedKey: "incident"
    default: "log"
    }
}

@Suite struct APIEvolutionTests {
    @Test func aPinningFailureReasonAddedLaterFallsToTheDefaultOfADocumentedSwitch() {
        #expect(action(for: PinningFailure.Reason.pinMismatch.code) == "alert")
        #expect(action(for: PinningFailure.Reason.noPinsForHost(updateResult: .networkError).code) == "update")
        #expect(action(for: PinningFailure.Reason.deniedKey(depth: 1).code) == "incident")
        #expect(action(for: PinningFailure.Reason.hostNotExpected.code) == "log")
        #expect(action(for: .revokedForTest) == "log")
    }

    @Test func theReasonPatternsOfTheEnumStillMatchAReason() {
        let reason = PinningFailure.Reason.noPinsForHost(updateResult: .invalidSignature)
        // `case .noPinsForHost:` without its value, as code written against the enum had it.
        let matched = switch reason {
        case .pinMismatch: "mismatch"
        case .noPinsForHost: "no pins"
        default: "other"
        }
        #expect(matched == "no pins")
        #expect(PinningFailure.Reason.pinMismatch == .pinMismatch)
        if case .pinMismatch = reason { Issue.record("a reason without pins matched .pinMismatch") }
        #expect(reason != .noPinsForHost(updateResult: nil), "reasons stay equal only with equal values")
        let optional: PinningFailure.Reason? = .deniedKey(depth: 0)
        guard case .deniedKey = optional else {
            Issue.record("an optional denied-key reason did not match .deniedKey")
            return
        }
        if case .deniedKey = PinningFailure.Reason?.none { Issue.record("no reason matched .deniedKey") }
    }

    @Test func whatAReasonCarriesIsReadThroughItsAccessors() {
        let chainError = ChainValidationError(.expired, depth: 1, detail: "certificate has expired")
        #expect(PinningFailure.Reason.chainNotTrusted(chainError).chainValidationError?.reason == .expired)
        #expect(PinningFailure.Reason.noPinsForHost(updateResult: .networkError).updateResult == .networkError)
        #expect(PinningFailure.Reason.deniedKey(depth: 2).deniedKeyDepth == 2)
        let transport = TransportSecurityViolation(requirement: .forwardSecrecy, detail: "RSA key exchange")
        #expect(PinningFailure.Reason.transportSecurityNotMet(transport).transportSecurityViolation == transport)
        let ct = CertificateTransparencyViolation(problem: .noIssuer, detail: "")
        #expect(PinningFailure.Reason.certificateTransparencyNotMet(ct).certificateTransparencyViolation == ct)
        #expect(PinningFailure.Reason.pinMismatch.chainValidationError == nil)
        #expect(PinningFailure.Reason.pinMismatch.deniedKeyDepth == nil)
    }

    @Test func anUpdateResultAddedLaterFallsToTheDefaultOfADocumentedSwitch() {
        func retries(_ result: PinStore.UpdateResult) -> Bool {
            switch result {
            case .ok: false
            case .networkError: true
            default: false
            }
        }
        #expect(retries(.networkError))
        #expect(!retries(.ok))
        #expect(!retries(.rollbackRefusedForTest))
        #expect(PinStore.UpdateResult.rollbackRefusedForTest != .invalidData)
    }

    @Test func anUpdateActivityAddedLaterFallsToTheDefaultOfTheREADMESwitch() {
        // The README's `switch (report.result, report.activity)`.
        func line(_ result: PinStore.UpdateResult, _ activity: PinStore.UpdateActivity) -> String {
            switch (result, activity) {
            case (.ok, .downloaded): "downloaded"
            case (.ok, _): "kept"
            default: "failed"
            }
        }
        #expect(line(.ok, .downloaded) == "downloaded")
        #expect(line(.ok, .resumedForTest) == "kept")
        #expect(line(.networkError, .resumedForTest) == "failed")
    }

    @Test func aChainValidationReasonAddedLaterFallsToTheDefaultOfADocumentedSwitch() {
        func isClockProblem(_ reason: ChainValidationError.Reason) -> Bool {
            switch reason {
            case .expired, .notYetValid: true
            default: false
            }
        }
        #expect(isClockProblem(.expired))
        #expect(!isClockProblem(.unknownIssuer))
        #expect(!isClockProblem(.revokedForTest))
        #expect(ChainValidationError.Reason.expired.name == "expired")
    }

    @Test func aCertificateTransparencyProblemAddedLaterFallsToTheDefaultOfADocumentedSwitch() {
        func asksPartner(_ code: CertificateTransparencyViolation.Problem.Code) -> Bool {
            switch code {
            case .tooFewSCTs, .tooFewOperators: true
            default: false
            }
        }
        let problem = CertificateTransparencyViolation.Problem.tooFewSCTs(required: 3, counted: 1)
        #expect(asksPartner(problem.code))
        #expect(problem.required == 3 && problem.counted == 1)
        #expect(!asksPartner(CertificateTransparencyViolation.Problem.noIssuer.code))
        #expect(!asksPartner(.logDistrustedForTest))
        // `case .tooFewSCTs:` on the problem itself, whatever its numbers.
        if case .tooFewOperators = problem { Issue.record("tooFewSCTs matched tooFewOperators") }
    }

    @Test func aPinKindAddedLaterFallsToTheDefaultOfADocumentedSwitch() {
        func category(_ code: PinIdentity.Kind.Code) -> String {
            switch code {
            case .leafKey, .certificate: "leaf"
            case .caKey: "issuer"
            default: "other"
            }
        }
        #expect(category(PinIdentity.Kind.certificate(depth: 0).code) == "leaf")
        #expect(category(PinIdentity.Kind.caKey.code) == "issuer")
        #expect(category(.sha384KeyForTest) == "other")
        #expect(PinIdentity.Kind.key(depth: 2).depth == 2)
        #expect(PinIdentity.Kind.certificate(depth: nil).depth == nil)
    }

    @Test func theVersionStringIsTheNewestReleaseOfTheChangelogAndTheREADMEInstallLine() throws {
        let changelog = try String(contentsOf: TestResources.packageRoot.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        // "## Unreleased" may stand above it, gathering what the next release will list.
        let newest = changelog.split(separator: "\n").first { $0.hasPrefix("## ") && $0.dropFirst(3).first?.isNumber == true }
        #expect(newest?.dropFirst(3).hasPrefix(PinStoreVersion.current + " ") == true,
                "CHANGELOG.md's newest release is \(newest ?? "missing"), PinStoreVersion.current is \(PinStoreVersion.current)")
        let readme = try String(contentsOf: TestResources.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        #expect(readme.contains("from: \"\(PinStoreVersion.current)\""), "the README's install line names another version")
    }
}
