import Foundation

/// Why a certificate fell short of its host's Certificate Transparency requirement
/// (``PinningFailure/Reason/certificateTransparencyNotMet(_:)``).
public struct CertificateTransparencyViolation: Sendable, Hashable, CustomStringConvertible {
    /// What is missing.
    ///
    /// Not an enum: the CT policies change and a minor release may add problems. Match on
    /// ``code`` with a `default`, or compare (`violation.problem == .noIssuer`); the numbers
    /// of ``tooFewSCTs(required:counted:)`` and ``tooFewOperators(required:counted:)`` are
    /// ``required`` and ``counted``.
    public struct Problem: Sendable, Hashable {
        /// Which problem this is, without its numbers. A minor release may add members.
        public struct Code: Sendable, Hashable, CustomStringConvertible {
            /// A stable name: the problem's static member, e.g. `"tooFewSCTs"`.
            public let name: String
            init(_ name: String) { self.name = name }
            /// ``name``.
            public var description: String { name }

            /// ``Problem/tooFewSCTs(required:counted:)``.
            public static let tooFewSCTs = Code("tooFewSCTs")
            /// ``Problem/tooFewOperators(required:counted:)``.
            public static let tooFewOperators = Code("tooFewOperators")
            /// ``Problem/noSCTFromCurrentLog``.
            public static let noSCTFromCurrentLog = Code("noSCTFromCurrentLog")
            /// ``Problem/noSCTFromRFC6962Log``.
            public static let noSCTFromRFC6962Log = Code("noSCTFromRFC6962Log")
            /// ``Problem/unreadableSCTs``.
            public static let unreadableSCTs = Code("unreadableSCTs")
            /// ``Problem/noIssuer``.
            public static let noIssuer = Code("noIssuer")
            /// ``Problem/needsValidatedChain``.
            public static let needsValidatedChain = Code("needsValidatedChain")
        }

        /// The problems this version knows; internal so that our own code must answer a new one.
        enum Backing: Sendable, Hashable {
            case tooFewSCTs(required: Int, counted: Int)
            case tooFewOperators(required: Int, counted: Int)
            case noSCTFromCurrentLog
            case noSCTFromRFC6962Log
            case unreadableSCTs
            case noIssuer
            case needsValidatedChain
        }

        let backing: Backing

        private init(_ backing: Backing) { self.backing = backing }

        /// Fewer SCTs from distinct counting logs than the leaf's lifetime needs.
        public static func tooFewSCTs(required: Int, counted: Int) -> Problem { Problem(.tooFewSCTs(required: required, counted: counted)) }
        /// The counted SCTs come from fewer distinct log operators than the profile needs.
        public static func tooFewOperators(required: Int, counted: Int) -> Problem {
            Problem(.tooFewOperators(required: required, counted: counted))
        }
        /// No counted SCT is from a log that is qualified, usable or read-only now (both profiles:
        /// SCTs from logs retired since count, but not on their own).
        public static let noSCTFromCurrentLog = Problem(.noSCTFromCurrentLog)
        /// Apple: no counted SCT is from an RFC 6962 log.
        public static let noSCTFromRFC6962Log = Problem(.noSCTFromRFC6962Log)
        /// The leaf's SCT list extension is malformed, truncated or present twice.
        public static let unreadableSCTs = Problem(.unreadableSCTs)
        /// The validated chain has no issuer above the leaf, which the SCT signatures cover.
        public static let noIssuer = Problem(.noIssuer)
        /// The adapter sees only the leaf (AsyncHTTPClient), so the SCTs cannot be checked.
        public static let needsValidatedChain = Problem(.needsValidatedChain)

        /// Which problem this is.
        public var code: Code {
            switch backing {
            case .tooFewSCTs: .tooFewSCTs
            case .tooFewOperators: .tooFewOperators
            case .noSCTFromCurrentLog: .noSCTFromCurrentLog
            case .noSCTFromRFC6962Log: .noSCTFromRFC6962Log
            case .unreadableSCTs: .unreadableSCTs
            case .noIssuer: .noIssuer
            case .needsValidatedChain: .needsValidatedChain
            }
        }

        /// How many SCTs or operators the profile needs, for the problems that count; nil otherwise.
        public var required: Int? {
            switch backing {
            case .tooFewSCTs(let required, _), .tooFewOperators(let required, _): required
            default: nil
            }
        }

        /// How many SCTs or operators were counted, for the problems that count; nil otherwise.
        public var counted: Int? {
            switch backing {
            case .tooFewSCTs(_, let counted), .tooFewOperators(_, let counted): counted
            default: nil
            }
        }

        /// Whether `problem` is of the kind `code`, whatever its numbers (`case .tooFewSCTs:`).
        public static func ~= (code: Code, problem: Problem) -> Bool { problem.code == code }
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
        let what = switch problem.backing {
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
