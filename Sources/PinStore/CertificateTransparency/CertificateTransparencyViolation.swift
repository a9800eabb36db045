import Foundation

/// Why a certificate fell short of its host's Certificate Transparency requirement
/// (``PinningFailure/Reason/certificateTransparencyNotMet(_:)``).
public struct CertificateTransparencyViolation: Sendable, Hashable, CustomStringConvertible {
    /// What is missing.
    public enum Problem: Sendable, Hashable {
        /// Fewer SCTs from distinct counting logs than the leaf's lifetime needs.
        case tooFewSCTs(required: Int, counted: Int)
        /// The counted SCTs come from fewer distinct log operators than the profile needs.
        case tooFewOperators(required: Int, counted: Int)
        /// No counted SCT is from a log that is qualified, usable or read-only now (both profiles:
        /// SCTs from logs retired since count, but not on their own).
        case noSCTFromCurrentLog
        /// Apple: no counted SCT is from an RFC 6962 log.
        case noSCTFromRFC6962Log
        /// The leaf's SCT list extension is malformed, truncated or present twice.
        case unreadableSCTs
        /// The validated chain has no issuer above the leaf, which the SCT signatures cover.
        case noIssuer
        /// The adapter sees only the leaf (AsyncHTTPClient), so the SCTs cannot be checked.
        case needsValidatedChain
    }

    /// What is missing.
    public let problem: Problem
    /// SCTs signed by logs the signed list does not name (a list update may know them).
    public let sctsFromUnknownLogs: Int
    /// One line for operators: what each SCT was found to be.
    public let detail: String

    /// Creates a violation.
    public init(problem: Problem, sctsFromUnknownLogs: Int = 0, detail: String) {
        self.problem = problem
        self.sctsFromUnknownLogs = sctsFromUnknownLogs
        self.detail = detail
    }

    /// The problem and the detail, on one line.
    public var description: String {
        let what = switch problem {
        case .tooFewSCTs(let required, let counted):
            "\(counted) SCT(s) from distinct qualifying logs, \(required) needed"
        case .tooFewOperators(let required, let counted):
            "the counted SCTs come from \(counted) log operator(s), \(required) needed"
        case .noSCTFromCurrentLog:
            "no SCT from a log that is qualified, usable or read-only now"
        case .noSCTFromRFC6962Log:
            "no SCT from an RFC 6962 log"
        case .unreadableSCTs:
            "the certificate's SCT list cannot be read"
        case .noIssuer:
            "the validated chain has no issuer certificate, which the SCTs are signed over"
        case .needsValidatedChain:
            "this adapter sees only the leaf certificate and cannot check SCTs"
        }
        return detail.isEmpty ? what : "\(what) (\(detail))"
    }
}
