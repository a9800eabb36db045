import Foundation

extension PinPolicyImport {
    /// The `NSExceptionDomains` of an Info.plist (XML or binary), or of a plist whose top level is
    /// `NSAppTransportSecurity`'s dictionary, as ``TransportSecurityException`` values; none when
    /// the plist has no `NSExceptionDomains`.
    ///
    /// ```swift
    /// let plist = try Data(contentsOf: infoPlistURL)
    /// var configuration = PinStore.Configuration(serviceURL: listURL, publicKey: listKey,
    ///                                            policies: try PinPolicyImport.infoPlist(plist))
    /// configuration.transportSecurityExceptions = try PinPolicyImport.transportSecurityExceptions(infoPlist: plist)
    /// ```
    ///
    /// Per domain: `NSIncludesSubdomains`, `NSExceptionMinimumTLSVersion` (`"TLSv1.0"` ...
    /// `"TLSv1.3"`) and `NSExceptionRequiresForwardSecrecy` are read (the `NSThirdParty...`
    /// spellings of the last two too, when the first-party key is absent).
    /// `NSRequiresCertificateTransparency` enforces Certificate Transparency for the domain
    /// (``TransportSecurityException/requiresCertificateTransparency``).
    /// `NSExceptionAllowsInsecureHTTPLoads` and `NSThirdPartyExceptionAllowsInsecureHTTPLoads`
    /// are accepted and have no effect: PinStore never allows
    /// plain HTTP or relaxes the trust evaluation. Any other key is refused, so a typo cannot
    /// silently drop an exception.
    public static func transportSecurityExceptions(infoPlist data: Data) throws(PinPolicyImportError) -> [TransportSecurityException] {
        let top = try plistDictionary(data)
        var path = "NSAppTransportSecurity.NSExceptionDomains"
        let domainsValue: Any?
        if let ats = try appTransportSecurity(in: top) {
            domainsValue = ats["NSExceptionDomains"]
        } else {
            domainsValue = top["NSExceptionDomains"]
            path = "NSExceptionDomains"
        }
        guard let domainsValue else { return [] }
        guard let domains = domainsValue as? [String: Any] else {
            throw PinPolicyImportError(location: path, reason: "is not a dictionary of domain names")
        }
        var exceptions: [TransportSecurityException] = []
        for domain in domains.keys.sorted() {
            let here = "\(path).\(domain)"
            guard let settings = domains[domain] as? [String: Any] else {
                throw PinPolicyImportError(location: here, reason: "is not a dictionary")
            }
            for key in settings.keys where !exceptionDomainKeys.contains(key) {
                throw PinPolicyImportError(location: "\(here).\(key)", reason: "unknown key (a typo would silently drop an exception)")
            }
            let includesSubdomains = try flag(settings, "NSIncludesSubdomains", at: here) ?? false
            guard !domain.contains("*") else {
                throw PinPolicyImportError(location: here, reason: "ATS domains have no wildcards; use the parent domain with NSIncludesSubdomains")
            }
            try checkDomain(domain, includesSubdomains: includesSubdomains, location: here)
            var exception = TransportSecurityException(domain: domain, includesSubdomains: includesSubdomains)
            let versionKey = settings["NSExceptionMinimumTLSVersion"] != nil ? "NSExceptionMinimumTLSVersion" : "NSThirdPartyExceptionMinimumTLSVersion"
            if let value = settings[versionKey] {
                guard let text = value as? String, let version = TLSProtocolVersion(rawValue: text) else {
                    throw PinPolicyImportError(location: "\(here).\(versionKey)",
                        reason: "\(String(describing: value)) is not one of \(TLSProtocolVersion.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                exception.minimumTLSVersion = version
            }
            let secrecyKey = settings["NSExceptionRequiresForwardSecrecy"] != nil
                ? "NSExceptionRequiresForwardSecrecy" : "NSThirdPartyExceptionRequiresForwardSecrecy"
            if let requires = try flag(settings, secrecyKey, at: here) {
                exception.requiresForwardSecrecy = requires
            }
            if let requires = try flag(settings, "NSRequiresCertificateTransparency", at: here) {
                exception.requiresCertificateTransparency = requires
            }
            // The keys without effect must still be Booleans: a malformed file is refused whole.
            for key in ["NSExceptionAllowsInsecureHTTPLoads", "NSThirdPartyExceptionAllowsInsecureHTTPLoads"] {
                _ = try flag(settings, key, at: here)
            }
            exceptions.append(exception)
        }
        return exceptions
    }

    private static let exceptionDomainKeys: Set<String> = [
        "NSIncludesSubdomains", "NSExceptionMinimumTLSVersion", "NSExceptionRequiresForwardSecrecy",
        "NSThirdPartyExceptionMinimumTLSVersion", "NSThirdPartyExceptionRequiresForwardSecrecy",
        "NSExceptionAllowsInsecureHTTPLoads", "NSThirdPartyExceptionAllowsInsecureHTTPLoads", "NSRequiresCertificateTransparency",
    ]

    private static func flag(_ settings: [String: Any], _ key: String, at location: String) throws(PinPolicyImportError) -> Bool? {
        guard let value = settings[key] else { return nil }
        guard let flag = value as? Bool else {
            throw PinPolicyImportError(location: "\(location).\(key)", reason: "is not a Boolean")
        }
        return flag
    }
}
