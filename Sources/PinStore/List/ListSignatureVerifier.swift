import Dispatch
import Foundation

/// Verifies fingerprint lists against the app's built-in public key, in either mode.
struct ListSignatureVerifier: Sendable {
    let publicKey: P256PublicKey

    /// Static mode: every entry carries a signature over its ``FingerprintEntry/signedBytes``.
    /// One bad entry rejects the whole list; a partial list is never used.
    func verifyStatic(_ document: FingerprintListDocument,
                      cores: Int = ProcessInfo.processInfo.activeProcessorCount) throws(PinStoreError) -> [FingerprintEntry] {
        let entries = document.entries
        // Large lists verify on every core: each signature is independent, and an OpenSSL key
        // may be used from several threads at once.
        let workers = entries.count >= Self.parallelThreshold ? max(1, cores) : 1
        let failures = Locked<[Int: PinStoreError]>([:])
        DispatchQueue.concurrentPerform(iterations: workers) { worker in
            // Worker w takes entries [n*w/W, n*(w+1)/W): contiguous, covering, never inverted
            // (more workers than entries just leaves some ranges empty).
            let range = Self.share(of: worker, workers: workers, count: entries.count)
            for index in range {
                if let failure = check(entries[index], position: index) {
                    failures.withLock { $0[index] = failure }
                    return
                }
            }
        }
        // Report the first bad entry in list order, whichever thread found it.
        if let first = failures.withLock({ $0.min { $0.key < $1.key } }) {
            throw first.value
        }
        return entries.map(\.entry)
    }

    /// Lists shorter than this verify on the calling thread (spreading them costs more than it saves).
    static let parallelThreshold = 64

    /// The entries worker `worker` of `workers` verifies out of `count`.
    static func share(of worker: Int, workers: Int, count: Int) -> Range<Int> {
        (count * worker / workers)..<(count * (worker + 1) / workers)
    }

    private func check(_ signed: FingerprintListDocument.SignedEntry, position index: Int) -> PinStoreError? {
        let position = "entry \(index + 1) (\"\(signed.entry.name)\")"
        guard let text = signed.signature else {
            return PinStoreError(.invalidListSignature, "\(position) has no signature; a static list signs every entry.")
        }
        guard let signature = Base64.decodeStrict(text) else {
            return PinStoreError(.invalidListSignature, "\(position): the signature is not valid Base64.")
        }
        guard verify(signature, signed.entry.signedBytes) else {
            return PinStoreError(.invalidListSignature, "\(position): the signature does not verify with the configured public key; was the list signed with another key, or changed after signing?")
        }
        return nil
    }

    /// Challenge mode: the response signature covers `challenge + "&" + body`.
    func verifyChallenge(body: Data, challenge: String, signatureHeader: String?) throws(PinStoreError) {
        guard let header = signatureHeader, !header.isEmpty else {
            throw PinStoreError(.invalidListSignature, "The response has no X-Cert-Pinning-Signature header; is the server in challenge mode?")
        }
        guard let signature = Base64.decodeStrict(header) else {
            throw PinStoreError(.invalidListSignature, "The X-Cert-Pinning-Signature header is not valid Base64.")
        }
        var signed = Data(challenge.utf8)
        signed.append(UInt8(ascii: "&"))
        signed.append(body)
        guard verify(signature, signed) else {
            throw PinStoreError(.invalidListSignature, "The response signature does not verify with the configured public key over this request's challenge; the response was signed with another key, for another challenge, or changed in transit.")
        }
    }

    /// DER is the wire encoding; raw r||s (64 bytes) is accepted as a convenience.
    func verify(_ signature: Data, _ message: Data) -> Bool {
        if signature.count == 64, publicKey.isValidRawSignature(signature, for: message) {
            return true
        }
        return publicKey.isValidSignature(signature, for: message)
    }
}
