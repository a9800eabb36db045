import Foundation
@_spi(Fuzzing) import PinStore

/// The fuzz targets, picked by the `FUZZ_TARGET` environment variable.
enum FuzzTarget: String, CaseIterable {
    /// The list document parser and static verification (`Fuzz/corpus/list`).
    case list
    /// Public keys as an app configures them: Base64 X9.63, PEM, Base64 or raw DER SPKI.
    case publicKey = "public-key"
    /// Certificates: DER, PEM, PEM bundles with junk between blocks.
    case certificate
    /// The store file loader (a real file, read and verified as at start-up).
    case storeFile = "store-file"
    /// Host-name rules.
    case hostName = "host-name"
    /// The Info.plist importer: `NSPinnedDomains` and `NSExceptionDomains`, XML and binary.
    case infoPlist = "info-plist"
    /// The Android `network_security_config.xml` importer.
    case networkSecurityConfig = "network-security-config"
    /// The embedded SCT list parser (Certificate Transparency), on the raw TLS-encoded list.
    case sctList = "sct-list"
    /// Key documents (the list-signing keys' rotation chain): parsed, followed from a trusted
    /// set with every signature checked, the newest one's expiry judged.
    case keyDocuments = "key-documents"
    /// CRLs as a distribution point serves them (DER): parsed, their scope and entries read,
    /// verified against the fixture intermediate; the bytes also read as a certificate's CRL
    /// distribution points.
    case crl

    static let current: FuzzTarget = {
        let name = ProcessInfo.processInfo.environment["FUZZ_TARGET"] ?? ""
        guard let target = FuzzTarget(rawValue: name) else {
            let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
            FileHandle.standardError.write(Data("set FUZZ_TARGET to one of: \(names)\n".utf8))
            exit(2)
        }
        return target
    }()

    /// A private scratch folder for the store-file target (tmpfs where there is one).
    static let scratch: URL = {
        let base = FileManager.default.fileExists(atPath: "/dev/shm") ? URL(fileURLWithPath: "/dev/shm") : FileManager.default.temporaryDirectory
        let url = base.appendingPathComponent("pinstore-fuzz-\(getpid())")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        // libFuzzer ends with exit(): remove the folder then.
        atexit { try? FileManager.default.removeItem(at: FuzzTarget.scratch) }
        return url
    }()

    func run(_ data: Data) {
        switch self {
        case .list:
            FuzzEntryPoints.listDocument(data)
        case .publicKey:
            _ = try? P256PublicKey(configuredString: String(decoding: data, as: UTF8.self))
            _ = try? P256PublicKey(derSubjectPublicKeyInfo: data)
            _ = try? P256PublicKey(x963Representation: data)
        case .certificate:
            if let certificates = try? X509Certificate.certificates(fileContents: data) {
                for certificate in certificates {
                    _ = (certificate.subject, certificate.issuer, certificate.commonName, certificate.dnsNames,
                         certificate.ipAddresses, certificate.spkiSHA256Base64, certificate.fingerprintHex)
                }
            }
            _ = try? X509Certificate.certificates(pem: String(decoding: data, as: UTF8.self))
        case .storeFile:
            FuzzEntryPoints.storeFile(data, directory: Self.scratch)
        case .hostName:
            FuzzEntryPoints.hostName(data)
        case .infoPlist:
            if let policies = try? PinPolicyImport.infoPlist(data) { Self.checkImported(policies) }
            _ = try? PinPolicyImport.transportSecurityExceptions(infoPlist: data)
        case .networkSecurityConfig:
            if let policies = try? PinPolicyImport.networkSecurityConfig(data) { Self.checkImported(policies) }
        case .sctList:
            FuzzEntryPoints.sctList(data)
        case .crl:
            FuzzEntryPoints.crl(data)
        case .keyDocuments:
            Self.checkFollowed(FuzzEntryPoints.keyDocuments(data))
        }
    }

    /// What following key documents promises, whatever the input: the versions accepted are
    /// exactly the ones after the trusted version 1, none skipped, at most 32 of them. A broken
    /// promise is a crash.
    static func checkFollowed(_ versions: [Int64]) {
        guard versions.count <= 32, versions.elementsEqual(2..<(2 + Int64(versions.count))) else {
            fatalError("following key documents accepted versions \(versions), not 2, 3, ... (at most 32)")
        }
    }

    /// What an import that succeeded promises, whatever the input: every policy has a domain
    /// and pins, and every pin is Base64 of a 32-byte digest. A broken promise is a crash.
    static func checkImported(_ policies: [PinPolicy]) {
        for policy in policies {
            guard !policy.domain.isEmpty, !policy.pins.isEmpty else {
                fatalError("an import yielded a policy without a domain or pins: \(policy)")
            }
            for pin in policy.pins {
                guard let digest = Data(base64Encoded: pin.sha256Base64), digest.count == 32 else {
                    fatalError("an import yielded a pin that is not a SHA-256 digest: \(pin)")
                }
            }
        }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> Int32 {
    let data = bytes.map { Data(bytes: $0, count: count) } ?? Data()
    FuzzTarget.current.run(data)
    return 0
}
