import Foundation
internal import COpenSSL
internal import CPinStoreShims

/// The normal trust evaluation that pinning strengthens (and never replaces): build a chain
/// from the presented certificates to a trust anchor, check every signature, validity dates,
/// CA constraints, the TLS server purpose and the host name.
///
/// ```swift
/// let validator = ChainValidator(trustRoots: .anchors([rootCA]))
/// let chain = try validator.validate(chain: [leafDER, intermediateDER],
///                                    hostname: "api.example.com")
/// // chain: leaf ... anchor, as verified
/// ```
public struct ChainValidator: Sendable {
    /// Where chains must lead.
    public let trustRoots: TrustRoots

    /// A validator against `trustRoots` (the system store by default).
    public init(trustRoots: TrustRoots = .system) {
        self.trustRoots = trustRoots
    }

    /// Validates the chain a server presented (DER, leaf first) for `hostname` at `time`.
    ///
    /// - Parameters:
    ///   - chain: The certificates the server sent, leaf first.
    ///   - hostname: The DNS name (wildcards in certificates are honoured, one label only) or
    ///     IP address (v4 or v6, brackets allowed) the client connected to.
    ///   - time: The time at which validity is judged.
    /// - Returns: The validated chain from the leaf to the trust anchor.
    /// - Throws: ``ChainValidationError`` saying why the chain is not trusted.
    public func validate(chain: [Data], hostname: String, at time: Date = Date()) throws(ChainValidationError) -> [X509Certificate] {
        var certificates: [X509Certificate] = []
        for der in try validatedDER(chain: chain, hostname: hostname, at: time) {
            if let certificate = try? X509Certificate(derRepresentation: der) { certificates.append(certificate) }
        }
        return certificates
    }

    /// ``validate(chain:hostname:at:)`` answering DER, leaf to anchor. Adapters use this: it
    /// parses nothing beyond what verification needs, and repeats of a chain already verified
    /// for the same host are answered from the trust store's cache.
    func validatedDER(chain: [Data], hostname: String, at time: Date = Date()) throws(ChainValidationError) -> [Data] {
        guard !chain.isEmpty else {
            throw ChainValidationError(.emptyChain, depth: 0, detail: "The server presented no certificate.")
        }
        let seconds = Int64(time.timeIntervalSince1970.rounded(.down))
        // First: a changed system store is reloaded (and the cache emptied) before any answer.
        let store = trustRoots.store.current()
        let cacheKey = VerifiedChainCache.Key(hostname: hostname, chain: chain)
        if let cacheKey, let cached = trustRoots.store.cache.chain(for: cacheKey, at: seconds) {
            return cached
        }
        let verified = try withExtendedLifetime(store) { () throws(ChainValidationError) -> VerifiedChainCache.Entry in
            let first = store.preferred
            do throws(ChainValidationError) {
                return try verify(chain: chain, hostname: hostname, at: seconds, against: first)
            } catch {
                // A refusal by the directory-only system store is never final: the bundle file
                // may hold a root the directory lacks, so the complete store (bundle parsed too,
                // once per reload) decides. Failures of the input itself need no second look.
                let aboutTheInput: Set<ChainValidationError.Reason> = [.emptyChain, .malformedCertificate, .hostnameMismatch]
                guard !aboutTheInput.contains(error.reason), first === store, let complete = store.complete() else { throw error }
                return try verify(chain: chain, hostname: hostname, at: seconds, against: complete)
            }
        }
        if let cacheKey { trustRoots.store.cache.insert(verified, for: cacheKey) }
        return verified.chain
    }

    private func verify(chain: [Data], hostname: String, at seconds: Int64, against snapshot: X509StoreSnapshot) throws(ChainValidationError) -> VerifiedChainCache.Entry {
        guard let store = snapshot.pointer else {
            throw ChainValidationError(.other, depth: 0, detail: "The trust store could not be built: \(snapshot.setupProblems.joined(separator: "; "))")
        }
        var handles: [X509Handle] = []
        for (index, der) in chain.enumerated() {
            do {
                handles.append(try X509Handle(der: der))
            } catch {
                throw ChainValidationError(.malformedCertificate, depth: index, detail: error.reason)
            }
        }
        guard let untrusted = CPinStoreShims_sk_X509_new_null() else {
            throw ChainValidationError(.other, depth: 0, detail: "OpenSSL could not allocate a certificate stack.")
        }
        // The stack borrows the handles' certificates; the handles free them.
        defer { CPinStoreShims_sk_X509_free(untrusted) }
        for handle in handles.dropFirst() {
            _ = CPinStoreShims_sk_X509_push(untrusted, handle.pointer)
        }
        guard let context = X509_STORE_CTX_new() else {
            throw ChainValidationError(.other, depth: 0, detail: "OpenSSL could not allocate a verification context.")
        }
        defer { X509_STORE_CTX_free(context) }
        guard X509_STORE_CTX_init(context, store, handles[0].pointer, untrusted) == 1 else {
            throw ChainValidationError(.other, depth: 0, detail: "OpenSSL could not start verification: \(OpenSSLErrorQueue.drain().joined(separator: "; "))")
        }
        let parameters = X509_STORE_CTX_get0_param(context)
        X509_VERIFY_PARAM_set_time(parameters, time_t(seconds))
        try Self.setHost(hostname, on: parameters)
        guard X509_STORE_CTX_set_purpose(context, X509_PURPOSE_SSL_SERVER) == 1 else {
            OpenSSLErrorQueue.clear()
            throw ChainValidationError(.other, depth: 0, detail: "OpenSSL could not set the TLS server purpose.")
        }

        // The context and the stack borrow the handles' certificates: keep them alive until
        // verification and the read-back are done.
        return try withExtendedLifetime(handles) { () throws(ChainValidationError) -> VerifiedChainCache.Entry in
            try Self.runVerification(context)
        }
    }

    private static func runVerification(_ context: OpaquePointer) throws(ChainValidationError) -> VerifiedChainCache.Entry {
        guard X509_verify_cert(context) == 1 else {
            let code = X509_STORE_CTX_get_error(context)
            let depth = Int(X509_STORE_CTX_get_error_depth(context))
            OpenSSLErrorQueue.clear()
            let message = String(cString: X509_verify_cert_error_string(Int(code)))
            throw ChainValidationError(ChainValidationError.Reason(openSSLCode: code), depth: depth, detail: message)
        }
        // Read the verified chain back as DER, and the window in which every certificate of it
        // is valid (for the cache), from the already parsed certificates.
        let verified = X509_STORE_CTX_get0_chain(context)
        var result: [Data] = []
        var validFrom = Int64.min
        var validUntil = Int64.max
        for index in 0..<CPinStoreShims_sk_X509_num(verified) {
            guard let certificate = CPinStoreShims_sk_X509_value(verified, index) else { continue }
            var out: UnsafeMutablePointer<UInt8>? = nil
            let length = i2d_X509(certificate, &out)
            guard length > 0, let out else {
                OpenSSLErrorQueue.clear()
                throw ChainValidationError(.other, depth: Int(index), detail: "The verified chain could not be read back.")
            }
            result.append(Data(bytes: out, count: Int(length)))
            openSSLFree(out)
            validFrom = max(validFrom, X509Handle.seconds(X509_get0_notBefore(certificate)) ?? .max)
            validUntil = min(validUntil, X509Handle.seconds(X509_get0_notAfter(certificate)) ?? .min)
        }
        return VerifiedChainCache.Entry(chain: result, validFrom: validFrom, validUntil: validUntil, verifiedAt: .now)
    }

    private static func setHost(_ hostname: String, on parameters: OpaquePointer?) throws(ChainValidationError) {
        guard !hostname.isEmpty else {
            throw ChainValidationError(.hostnameMismatch, depth: 0, detail: "No host name was given to check the certificate against.")
        }
        // OpenSSL reads a leading dot as "any subdomain of", and a NUL can make two layers see
        // two names: HostName refuses both (and any other name that cannot be a host) before
        // X509_VERIFY_PARAM_set1_host, and drops brackets and a trailing dot.
        guard let host = (try? HostName(hostname))?.text else {
            throw ChainValidationError(.hostnameMismatch, depth: 0, detail: HostName.problem(hostname))
        }
        let rc: Int32
        if IPAddress.isLiteral(host) {
            rc = X509_VERIFY_PARAM_set1_ip_asc(parameters, host)
        } else {
            X509_VERIFY_PARAM_set_hostflags(parameters, UInt32(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS))
            rc = X509_VERIFY_PARAM_set1_host(parameters, host, host.utf8.count)
        }
        guard rc == 1 else {
            OpenSSLErrorQueue.clear()
            throw ChainValidationError(.hostnameMismatch, depth: 0, detail: "\"\(hostname)\" is not a host name or IP address a certificate can be checked against.")
        }
    }
}

/// IP-literal detection through the C library's parser.
enum IPAddress {
    static func isLiteral(_ text: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1
    }
}

/// Why a presented chain is not trusted by the normal evaluation.
public struct ChainValidationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of failure, independent of OpenSSL's numbering.
    ///
    /// Not an enum: a minor release may tell more of OpenSSL's refusals apart (today's
    /// ``other``). Compare against the static members, and keep a `default` in a `switch`.
    public struct Reason: Sendable, Hashable, CustomStringConvertible {
        /// A stable name: the static member's, e.g. `"unknownIssuer"`.
        public let name: String
        init(_ name: String) { self.name = name }
        /// ``name``.
        public var description: String { name }
        /// ``name``, as the enum's raw value was.
        @available(*, deprecated, renamed: "name")
        public var rawValue: String { name }

        /// The server presented no certificate.
        public static let emptyChain = Reason("emptyChain")
        /// A presented certificate does not parse.
        public static let malformedCertificate = Reason("malformedCertificate")
        /// A certificate's notAfter is before the evaluation time.
        public static let expired = Reason("expired")
        /// A certificate's notBefore is after the evaluation time.
        public static let notYetValid = Reason("notYetValid")
        /// No chain leads to a configured trust anchor.
        public static let unknownIssuer = Reason("unknownIssuer")
        /// The chain ends in a self-signed certificate that is not a configured anchor.
        public static let untrustedSelfSigned = Reason("untrustedSelfSigned")
        /// A certificate's signature does not verify with its issuer's key.
        public static let badSignature = Reason("badSignature")
        /// The leaf is not valid for the host name or IP address.
        public static let hostnameMismatch = Reason("hostnameMismatch")
        /// A certificate used as an issuer is not a CA (basicConstraints or keyUsage).
        public static let notACertificateAuthority = Reason("notACertificateAuthority")
        /// A certificate is not valid for TLS server authentication (extendedKeyUsage).
        public static let invalidPurpose = Reason("invalidPurpose")
        /// A CA's path-length constraint is exceeded.
        public static let pathLengthExceeded = Reason("pathLengthExceeded")
        /// Anything else OpenSSL refused; ``ChainValidationError/detail`` has its words.
        public static let other = Reason("other")
    }

    /// The kind of failure.
    public let reason: Reason
    /// Position in the chain of the certificate at fault (0 = leaf).
    public let depth: Int
    /// OpenSSL's words, for logs.
    public let detail: String

    init(_ reason: Reason, depth: Int, detail: String) {
        self.reason = reason
        self.depth = depth
        self.detail = detail
    }

    public var description: String {
        "certificate chain not trusted: \(reason.name) at depth \(depth) (\(detail))"
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.reason == rhs.reason }
    public func hash(into hasher: inout Hasher) { hasher.combine(reason) }
}

extension ChainValidationError.Reason {
    init(openSSLCode code: Int32) {
        switch code {
        case X509_V_ERR_CERT_HAS_EXPIRED:
            self = .expired
        case X509_V_ERR_CERT_NOT_YET_VALID:
            self = .notYetValid
        case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY,
             X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE, X509_V_ERR_CERT_UNTRUSTED:
            self = .unknownIssuer
        case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT, X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
            self = .untrustedSelfSigned
        case X509_V_ERR_CERT_SIGNATURE_FAILURE, X509_V_ERR_UNABLE_TO_DECRYPT_CERT_SIGNATURE,
             X509_V_ERR_UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY:
            self = .badSignature
        case X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH:
            self = .hostnameMismatch
        case X509_V_ERR_INVALID_CA, X509_V_ERR_KEYUSAGE_NO_CERTSIGN:
            self = .notACertificateAuthority
        case X509_V_ERR_INVALID_PURPOSE:
            self = .invalidPurpose
        case X509_V_ERR_PATH_LENGTH_EXCEEDED:
            self = .pathLengthExceeded
        default:
            self = .other
        }
    }
}
