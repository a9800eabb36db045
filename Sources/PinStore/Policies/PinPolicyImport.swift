import Foundation

/// Why a pin configuration file could not be imported: where (a key path or a line) and why.
public struct PinPolicyImportError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The key path (`NSAppTransportSecurity.NSPinnedDomains.api.example.com.NSPinnedCAIdentities[0]`)
    /// or the line (`line 12`) of the problem.
    public let location: String
    /// What is wrong.
    public let reason: String

    /// Creates an error.
    public init(location: String, reason: String) {
        self.location = location
        self.reason = reason
    }

    /// `location: reason`.
    public var description: String { "\(location): \(reason)" }
}

/// Imports pin configurations written for the mobile platforms as ``PinPolicy`` values.
///
/// ```swift
/// let policies = try PinPolicyImport.infoPlist(Data(contentsOf: infoPlistURL))
/// let configuration = PinStore.Configuration(serviceURL: listURL, publicKey: listKey, policies: policies)
/// ```
///
/// The import checks names and digests and says where a problem is; the store checks the rest
/// when it is made (a domain with one pin is refused there for want of a backup pin).
public enum PinPolicyImport {
    /// The top-level dictionary of a property list.
    static func plistDictionary(_ data: Data) throws(PinPolicyImportError) -> [String: Any] {
        try checkUniqueKeys(inXMLPropertyList: data)
        let root: PropertyListValue
        do {
            root = try PropertyListValue.read(data)
        } catch let tooLarge as PropertyListValue.TooLarge {
            throw PinPolicyImportError(location: "plist", reason: "refused: \(tooLarge)")
        } catch {
            throw PinPolicyImportError(location: "plist", reason: "not a property list (\(error.localizedDescription))")
        }
        guard let top = root.plain as? [String: Any] else {
            throw PinPolicyImportError(location: "plist", reason: "the top level is not a dictionary")
        }
        return top
    }

    /// The `NSAppTransportSecurity` dictionary of an Info.plist; nil when it has none. A key
    /// App Transport Security does not define is refused: a misspelled `NSPinnedDomains` beside
    /// the real one would otherwise hide its pins.
    static func appTransportSecurity(in top: [String: Any]) throws(PinPolicyImportError) -> [String: Any]? {
        guard let ats = top["NSAppTransportSecurity"] else { return nil }
        guard let dictionary = ats as? [String: Any] else {
            throw PinPolicyImportError(location: "NSAppTransportSecurity", reason: "is not a dictionary")
        }
        for key in dictionary.keys.sorted() where !appTransportSecurityKeys.contains(key) {
            throw PinPolicyImportError(location: "NSAppTransportSecurity.\(key)",
                                       reason: "unknown key (a typo would silently drop pins or exceptions)")
        }
        return dictionary
    }

    /// The keys of `NSAppTransportSecurity` (Apple's Information Property List reference).
    private static let appTransportSecurityKeys: Set<String> = [
        "NSAllowsArbitraryLoads", "NSAllowsArbitraryLoadsForMedia", "NSAllowsArbitraryLoadsInWebContent",
        "NSAllowsLocalNetworking", "NSExceptionDomains", "NSPinnedDomains",
    ]

    /// The `NSPinnedDomains` of an Info.plist (XML or binary), or of a plist whose top level is
    /// `NSAppTransportSecurity`'s dictionary or `NSPinnedDomains` itself. Each domain becomes a
    /// policy: `NSPinnedLeafIdentities` as ``PinIdentity/leafKey(spkiSHA256Base64:)``,
    /// `NSPinnedCAIdentities` as ``PinIdentity/caKey(spkiSHA256Base64:)``; a domain with both
    /// requires a match in each (``PinPolicy/requiresMatchInEachCategory``), as ATS does.
    ///
    /// `NSIncludesSubdomains` means what ATS means by it: the domain and the names exactly one
    /// label below it. Apple's example: `example.com` with it covers `math.example.com` and
    /// `history.example.com`, not `advanced.math.example.com`. Such a domain is imported as two
    /// policies with the same pins, `example.com` and `*.example.com`. Where domains overlap,
    /// the most specific one decides for a host, as in ATS (see ``PinPolicy``).
    ///
    /// The import yields every pin the file declares or fails: a key ATS does not define (in
    /// `NSAppTransportSecurity`, a domain or an identity), `NSPinnedDomains` in two places, or a
    /// key written twice in one dictionary of an XML plist (a property list reader keeps only one
    /// of them) is refused with its key path or line.
    public static func infoPlist(_ data: Data) throws(PinPolicyImportError) -> [PinPolicy] {
        let top = try plistDictionary(data)
        var path = "NSAppTransportSecurity.NSPinnedDomains"
        let domainsValue: Any?
        if let ats = try appTransportSecurity(in: top) {
            guard top["NSPinnedDomains"] == nil else {
                throw PinPolicyImportError(location: "NSPinnedDomains",
                                           reason: "both at the top level and in NSAppTransportSecurity; "
                                               + "keep one (the other's pins would be dropped)")
            }
            domainsValue = ats["NSPinnedDomains"]
        } else if let pinned = top["NSPinnedDomains"] {
            domainsValue = pinned
        } else if !top.isEmpty, top.values.allSatisfy({ $0 is [String: Any] }) {
            // The NSPinnedDomains dictionary itself (domain -> settings).
            domainsValue = top
            path = "NSPinnedDomains"
        } else {
            domainsValue = nil
        }
        guard let domainsValue else {
            throw PinPolicyImportError(location: path, reason: "missing: the file pins nothing")
        }
        guard let domains = domainsValue as? [String: Any] else {
            throw PinPolicyImportError(location: path, reason: "is not a dictionary of domain names")
        }
        var policies: [PinPolicy] = []
        for domain in domains.keys.sorted() {
            let here = "\(path).\(domain)"
            guard let settings = domains[domain] as? [String: Any] else {
                throw PinPolicyImportError(location: here, reason: "is not a dictionary")
            }
            for key in settings.keys where !["NSIncludesSubdomains", "NSPinnedCAIdentities", "NSPinnedLeafIdentities"].contains(key) {
                throw PinPolicyImportError(location: "\(here).\(key)", reason: "unknown key (a typo would silently drop pins)")
            }
            var includesSubdomains = false
            if let value = settings["NSIncludesSubdomains"] {
                guard let flag = value as? Bool else {
                    throw PinPolicyImportError(location: "\(here).NSIncludesSubdomains", reason: "is not a Boolean")
                }
                includesSubdomains = flag
            }
            guard !domain.contains("*") else {
                throw PinPolicyImportError(location: here, reason: "ATS domains have no wildcards; use the parent domain with NSIncludesSubdomains")
            }
            try checkDomain(domain, includesSubdomains: includesSubdomains, location: here)
            let leaf = try identities(settings["NSPinnedLeafIdentities"], location: "\(here).NSPinnedLeafIdentities").map(PinIdentity.leafKey)
            let ca = try identities(settings["NSPinnedCAIdentities"], location: "\(here).NSPinnedCAIdentities").map(PinIdentity.caKey)
            guard !leaf.isEmpty || !ca.isEmpty else {
                throw PinPolicyImportError(location: here, reason: "has neither NSPinnedLeafIdentities nor NSPinnedCAIdentities")
            }
            let eachCategory = !leaf.isEmpty && !ca.isEmpty
            policies.append(PinPolicy(domain: domain, pins: leaf + ca, requiresMatchInEachCategory: eachCategory))
            if includesSubdomains {
                // ATS: the domain and the names one label below it, not deeper.
                policies.append(PinPolicy(domain: "*." + domain, pins: leaf + ca, requiresMatchInEachCategory: eachCategory))
            }
        }
        return policies
    }

    private static func identities(_ value: Any?, location: String) throws(PinPolicyImportError) -> [String] {
        guard let value else { return [] }
        guard let array = value as? [Any] else { throw PinPolicyImportError(location: location, reason: "is not an array") }
        var digests: [String] = []
        for (i, item) in array.enumerated() {
            let here = "\(location)[\(i)]"
            guard let dictionary = item as? [String: Any], let digest = dictionary["SPKI-SHA256-BASE64"] as? String else {
                throw PinPolicyImportError(location: here, reason: "is not a dictionary with a SPKI-SHA256-BASE64 string")
            }
            for key in dictionary.keys.sorted() where key != "SPKI-SHA256-BASE64" {
                throw PinPolicyImportError(location: "\(here).\(key)", reason: "unknown key (an identity has only SPKI-SHA256-BASE64)")
            }
            try checkDigest(digest, location: "\(here).SPKI-SHA256-BASE64")
            digests.append(digest)
        }
        return digests
    }

    static func checkDigest(_ digest: String, location: String) throws(PinPolicyImportError) {
        guard let data = Base64.decodeStrict(digest), data.count == 32 else {
            throw PinPolicyImportError(location: location, reason: "\(String(reflecting: digest)) is not Base64 of a 32-byte SHA-256 digest")
        }
    }

    static func checkDomain(_ domain: String, includesSubdomains: Bool, location: String) throws(PinPolicyImportError) {
        do {
            _ = try HostPattern(domain: domain, includesSubdomains: includesSubdomains)
        } catch {
            throw PinPolicyImportError(location: location, reason: error.reason)
        }
    }
}
