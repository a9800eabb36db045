import Foundation

/// A list one vantage point proposes for one version: the unsigned list bytes every co-signer
/// signs, and the approvals the proposer relies on. Nothing else in it is trusted: a co-signer
/// derives what it signs from the body and its own observations, and checks each approval
/// against its own `approverKeys` and its own staged change.
package struct Proposal: Codable, Sendable, Equatable {
    package var format = 2
    /// The list version the body carries.
    package var version: Int64
    /// The proposing vantage point's name (for logs only; never trusted).
    package var proposer: String
    /// Base64 of the unsigned list (empty `listSignature` and `listSignatures`).
    package var body: String
    /// Approvals of staged changes the body carries (each verified by every co-signer).
    package var approvals: [PublisherState.Approval]
    /// 128 random bits, so the proposal's bytes, and so its name in the medium, cannot be
    /// predicted and taken first (the body alone can be: a re-signing reuses per-entry
    /// signatures that are public, and its time is the second it is made).
    package var nonce: String

    package init(version: Int64, proposer: String, body: Data, approvals: [PublisherState.Approval]) {
        self.version = version
        self.proposer = proposer
        self.body = body.base64EncodedString()
        self.approvals = approvals
        var generator = SystemRandomNumberGenerator()
        self.nonce = (0..<2).map { _ in String(generator.next() as UInt64, radix: 16) }.joined(separator: "-")
    }

    /// The unsigned list bytes.
    package var bodyBytes: Data? { Data(base64Encoded: body) }
}

/// One key's signature of a proposal body.
package struct ProposalSignature: Codable, Sendable, Equatable {
    package var version: Int64
    /// Hex SHA-256 of the body it signs (a signature for another body counts for nothing).
    package var bodySHA256: String
    package var keyID: String
    /// Base64 DER over the body's labelled-signature bytes.
    package var signature: String
    /// The publisher (or person) that signed (for logs only).
    package var signer: String
}
