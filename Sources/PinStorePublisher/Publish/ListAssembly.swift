import Foundation
import PinStore
import PinStoreSigning

/// Makes the bytes of a list from the plan's entries, in the steps signers outside this
/// process need: per-entry signatures by the first signer (the deployed clients read them),
/// then an unsigned body with empty `listSignature` and `listSignatures` members, which each
/// key signs (labelled), then the finished list with every signature in place.
package final class ListAssembly: Sendable {
    /// Per-entry signatures already made, by signer key ID and signed bytes: an entry that does
    /// not change is not signed again, so a list of 1,000 partners signed by a command costs
    /// one command run per changed entry, not 1,000.
    private let entrySignatures = Locked<[Data: Data]>([:])
    private let entrySigner: any ListSigner

    package init(entrySigner: any ListSigner) {
        self.entrySigner = entrySigner
    }

    /// The unsigned body of list `version`.
    package func unsignedBody(entries: [FingerprintEntry], version: Int64, timestamp: Int64, expires: Int64,
                              certificateTransparency: Data?, revocations: [ListRevocations.Wire] = [],
                              crl: CRLHostList.Wire? = nil) async throws(PublisherError) -> Data {
        var signed: [(entry: FingerprintEntry, signature: Data)] = []
        signed.reserveCapacity(entries.count)
        for entry in entries {
            var cacheKey = Data(entrySigner.keyID.utf8)
            cacheKey.append(0)
            cacheKey.append(entry.signedBytes)
            if let known = entrySignatures.withLock({ $0[cacheKey] }) {
                signed.append((entry, known))
                continue
            }
            let signature = try await entrySigner.sign(entry.signedBytes)
            entrySignatures.withLock { $0[cacheKey] = signature }
            signed.append((entry, signature))
        }
        do {
            return try FingerprintListSigner.unsignedStaticList(signed, timestamp: timestamp, version: version, expires: expires,
                                                                certificateTransparency: certificateTransparency, revocations: revocations,
                                                                crl: crl, labelledSignatures: true)
        } catch {
            throw PublisherError(.refusedByRuntime, "The list would be refused by clients: \(error.reason)")
        }
    }

    /// What each key's labelled signature of `body` covers.
    package static func labelledMessage(of body: Data) throws(PublisherError) -> Data {
        do {
            return try WholeListSignature.labelledMessage(of: body)
        } catch {
            throw PublisherError(.proposal, "The proposed list is not an unsigned list in the publisher's layout: \(error.reason)")
        }
    }

    /// The finished list: `labelled` signatures in key ID order, then `listSignature` by `first`.
    package static func finish(_ body: Data, labelled: [(keyID: String, signature: Data)], first: any ListSigner) async throws(PublisherError) -> Data {
        do {
            let filled = try WholeListSignature.filling(body, labelled: labelled.sorted { $0.keyID < $1.keyID })
            let signature = try await first.sign(try WholeListSignature.firstMessage(of: filled))
            return try WholeListSignature.filling(filled, first: signature)
        } catch let error as PinStoreError {
            throw PublisherError(.refusedByRuntime, "The list could not be finished: \(error.reason)")
        } catch let error as PublisherError {
            throw error
        } catch {
            throw PublisherError(.signingFailed, "The list could not be finished.")
        }
    }
}
