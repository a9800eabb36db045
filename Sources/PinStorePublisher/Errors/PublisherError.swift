/// The error every publisher API throws: a code to match on, a reason for people (what went
/// wrong and what to do next), and where it was raised.
///
/// Equal when the codes are equal, as `PinStoreError` and swift-certificates' `VerificationError`
/// are, so tests and callers match on the code and show ``reason``.
///
/// ```swift
/// do {
///     _ = try PublicationFile(contentsOf: url)
/// } catch let error as PublisherError where error.code == .unknownKey {
///     print(error.reason) // "partners[2].sni2 is not a publication file key; ..."
/// }
/// ```
public struct PublisherError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure this is. Compare against the static members; new codes may be added
    /// without breaking anyone's `switch` (it is a struct, not an enum).
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// A stable name, e.g. `"unknownKey"`.
        public let name: String
        init(_ name: String) { self.name = name }
        /// The name.
        public var description: String { name }

        /// The publication file is not valid JSON, or a value has the wrong type or is out of range.
        public static let invalidPublicationFile = Code("invalidPublicationFile")
        /// The publication file has a key this version does not know (a typo would otherwise be
        /// ignored silently); the reason names its path, e.g. `partners[2].sni`.
        public static let unknownKey = Code("unknownKey")
        /// The publication file holds what looks like key material; it names key files or commands only.
        public static let inlineKeyMaterial = Code("inlineKeyMaterial")
        /// A file the publication file names (key, anchors, CT section) cannot be read or used.
        public static let unreadableReference = Code("unreadableReference")
        /// The state file cannot be read, is tampered with, or is owned or writable by someone else;
        /// or the state would be larger than the publisher reads back, so it was not written.
        public static let stateFile = Code("stateFile")
        /// A signer failed: the key could not sign, the command failed, timed out or printed
        /// something that is not a signature by the configured key.
        public static let signingFailed = Code("signingFailed")
        /// The list that would be published is one the runtime would refuse.
        public static let refusedByRuntime = Code("refusedByRuntime")
        /// The output folder could not be written; the last good list stays in place.
        public static let outputNotWritable = Code("outputNotWritable")
        /// No staged change has this ID.
        public static let unknownChange = Code("unknownChange")
        /// The approver's key is not one of the keys the clients trust.
        public static let untrustedApprover = Code("untrustedApprover")
        /// An announced key or SPKI cannot be read.
        public static let invalidAnnouncement = Code("invalidAnnouncement")
        /// The shared proposals folder holds something unusable, or a proposal lost a race.
        public static let proposal = Code("proposal")
    }

    /// What kind of failure this is.
    public let code: Code
    /// What went wrong and what to do next.
    public let reason: String
    /// Where the error was raised, for logs.
    public let file: String
    /// Where the error was raised, for logs.
    public let line: Int

    /// Creates an error.
    public init(_ code: Code, _ reason: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.reason = reason
        self.file = file
        self.line = line
    }

    /// `code: reason`.
    public var description: String { "\(code): \(reason)" }

    public static func == (lhs: PublisherError, rhs: PublisherError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
