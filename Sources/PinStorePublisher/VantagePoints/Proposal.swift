import Foundation

/// A list one publisher proposes for one version, in the shared proposals folder
/// (`proposal-<version>.json`): the unsigned list bytes every co-signer signs, and the pins
/// and observations behind them, so that each vantage point can compare them with its own.
package struct Proposal: Codable, Sendable, Equatable {
    /// One pin of the proposed list, with what the proposer saw.
    package struct Pin: Codable, Sendable, Equatable {
        package var partnerID: String
        package var name: String
        package var kind: PublicationFile.PinKind
        package var value: String
        package var expires: Int64
        /// `observed`, `announced`, `approved` or `kept` (in the list in force, withdrawal pending).
        package var source: String
        /// The proposer's sightings of the certificate behind it (0 for announced keys).
        package var sightings: Int
        package var firstSeen: Date?
        package var lastSeen: Date?

        /// `name kind value`.
        package var entryKey: String { "\(name.lowercased()) \(kind.entryKind.rawValue) \(value)" }
    }

    package var format = 1
    package var version: Int64
    /// The proposing publisher's name.
    package var proposer: String
    package var createdAt: Date
    /// Base64 of the unsigned list (empty `listSignature` and `listSignatures`).
    package var body: String
    /// Hex SHA-256 of the unsigned list bytes.
    package var bodySHA256: String
    package var pins: [Pin]
    /// Approvals of staged changes the list carries (each verified by every co-signer).
    package var approvals: [PublisherState.Approval]

    /// The unsigned list bytes.
    package var bodyBytes: Data? { Data(base64Encoded: body) }
}

/// One key's signature of a proposal (`signature-<version>-<keyid>.json`).
package struct ProposalSignature: Codable, Sendable, Equatable {
    package var version: Int64
    /// The proposal body it signs (a signature for another body is ignored).
    package var bodySHA256: String
    package var keyID: String
    /// Base64 DER over the body's labelled-signature bytes.
    package var signature: String
    /// The publisher (or person) that signed.
    package var signer: String
}
