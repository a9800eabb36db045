import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

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
        let root: Any
        do {
            root = try PropertyListSerialization.propertyList(from: data, options: [], format: nil)
        } catch {
            throw PinPolicyImportError(location: "plist", reason: "not a property list (\(error.localizedDescription))")
        }
        guard let top = root as? [String: Any] else {
            throw PinPolicyImportError(location: "plist", reason: "the top level is not a dictionary")
        }
        return top
    }

    /// The `NSAppTransportSecurity` dictionary of an Info.plist; nil when it has none.
    static func appTransportSecurity(in top: [String: Any]) throws(PinPolicyImportError) -> [String: Any]? {
        guard let ats = top["NSAppTransportSecurity"] else { return nil }
        guard let dictionary = ats as? [String: Any] else {
            throw PinPolicyImportError(location: "NSAppTransportSecurity", reason: "is not a dictionary")
        }
        return dictionary
    }

    /// The `NSPinnedDomains` of an Info.plist (XML or binary), or of a plist whose top level is
    /// `NSAppTransportSecurity`'s dictionary or `NSPinnedDomains` itself. Each domain becomes a
    /// policy: `NSPinnedLeafIdentities` as ``PinIdentity/leafKey(spkiSHA256Base64:)``,
    /// `NSPinnedCAIdentities` as ``PinIdentity/caKey(spkiSHA256Base64:)``; a domain with both
    /// requires a match in each (``PinPolicy/requiresMatchInEachCategory``), as ATS does.
    public static func infoPlist(_ data: Data) throws(PinPolicyImportError) -> [PinPolicy] {
        let top = try plistDictionary(data)
        var path = "NSAppTransportSecurity.NSPinnedDomains"
        let domainsValue: Any?
        if let ats = try appTransportSecurity(in: top) {
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
            try checkDomain(domain, includesSubdomains: includesSubdomains, location: here)
            let leaf = try identities(settings["NSPinnedLeafIdentities"], location: "\(here).NSPinnedLeafIdentities").map(PinIdentity.leafKey)
            let ca = try identities(settings["NSPinnedCAIdentities"], location: "\(here).NSPinnedCAIdentities").map(PinIdentity.caKey)
            guard !leaf.isEmpty || !ca.isEmpty else {
                throw PinPolicyImportError(location: here, reason: "has neither NSPinnedLeafIdentities nor NSPinnedCAIdentities")
            }
            policies.append(PinPolicy(domain: domain, includesSubdomains: includesSubdomains, pins: leaf + ca,
                                      requiresMatchInEachCategory: !leaf.isEmpty && !ca.isEmpty))
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

    /// The pin sets of an Android `network_security_config.xml`: every `domain` of a
    /// `domain-config` becomes a policy with that config's `pin-set` (or the nearest enclosing
    /// config's, as Android inherits it), `includeSubdomains` as ``PinPolicy/includesSubdomains``,
    /// each `pin digest="SHA-256"` as ``PinIdentity/anyKey(spkiSHA256Base64:)`` (Android matches a
    /// pin against every certificate of the chain), and `expiration="yyyy-MM-dd"` as the start of
    /// that day in UTC. Domains without a pin set are not pinned and are left out. Trust-anchor
    /// settings (`trust-anchors`, `overridePins`, `debug-overrides`) are not imported: PinStore's
    /// anchors are configured on the adapters, and nothing may override a pin.
    public static func networkSecurityConfig(_ data: Data) throws(PinPolicyImportError) -> [PinPolicy] {
        let reader = NetworkSecurityConfigReader()
        let parser = XMLParser(data: data)
        parser.delegate = reader
        parser.shouldProcessNamespaces = false
        let parsed = parser.parse()
        if let error = reader.error { throw error }
        guard parsed else {
            throw PinPolicyImportError(location: "line \(parser.lineNumber)",
                                       reason: "not well-formed XML (\(parser.parserError?.localizedDescription ?? "parse error"))")
        }
        guard reader.sawRoot else {
            throw PinPolicyImportError(location: "line 1", reason: "the root element is not <network-security-config>")
        }
        return reader.policies
    }
}

/// XMLParser's delegate for ``PinPolicyImport/networkSecurityConfig(_:)``. Used on one thread,
/// for one parse.
private final class NetworkSecurityConfigReader: NSObject, XMLParserDelegate {
    struct PinSet {
        var pins: [String] = []
        var expiration: Date?
    }

    struct Frame {
        var domains: [(name: String, includesSubdomains: Bool, line: Int)] = []
        var pinSet: PinSet?
    }

    var policies: [PinPolicy] = []
    var error: PinPolicyImportError?
    var sawRoot = false
    private var frames: [Frame] = []
    private var openPinSet: PinSet?
    private var text = ""
    private var pending: (element: String, includesSubdomains: Bool)?
    private var depth = 0

    private func fail(_ parser: XMLParser, _ reason: String) {
        guard error == nil else { return }
        error = PinPolicyImportError(location: "line \(parser.lineNumber)", reason: reason)
        parser.abortParsing()
    }

    func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                attributes: [String: String] = [:]) {
        depth += 1
        text = ""
        if depth == 1 {
            guard name == "network-security-config" else { return fail(parser, "the root element is <\(name)>, not <network-security-config>") }
            sawRoot = true
            return
        }
        switch name {
        case "domain-config":
            frames.append(Frame())
        case "domain":
            guard !frames.isEmpty else { return fail(parser, "<domain> outside a <domain-config>") }
            let flag = attributes["includeSubdomains"] ?? "false"
            guard flag == "true" || flag == "false" else { return fail(parser, "includeSubdomains=\"\(flag)\" is neither true nor false") }
            pending = ("domain", flag == "true")
        case "pin-set":
            guard !frames.isEmpty else { return fail(parser, "<pin-set> outside a <domain-config> (Android allows pins only there)") }
            guard frames[frames.count - 1].pinSet == nil else { return fail(parser, "a second <pin-set> in one <domain-config>") }
            var set = PinSet()
            if let expiration = attributes["expiration"] {
                guard let date = Self.date(expiration) else { return fail(parser, "expiration=\"\(expiration)\" is not a date yyyy-MM-dd") }
                set.expiration = date
            }
            openPinSet = set
        case "pin":
            guard openPinSet != nil else { return fail(parser, "<pin> outside a <pin-set>") }
            guard attributes["digest"] == "SHA-256" else {
                return fail(parser, "pin digest=\"\(attributes["digest"] ?? "")\": only SHA-256 is supported (as on Android)")
            }
            pending = ("pin", false)
        default:
            break   // base-config, trust-anchors, certificates, debug-overrides: not about pins
        }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        text += string
    }

    func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
        defer { depth -= 1 }
        let value = text.trimmingCharacters(in: .whitespacesAndNewlines)
        text = ""
        switch name {
        case "domain" where pending?.element == "domain":
            guard !value.isEmpty else { return fail(parser, "an empty <domain>") }
            frames[frames.count - 1].domains.append((value, pending?.includesSubdomains ?? false, parser.lineNumber))
            pending = nil
        case "pin" where pending?.element == "pin":
            do {
                try PinPolicyImport.checkDigest(value, location: "line \(parser.lineNumber)")
            } catch {
                self.error = error
                parser.abortParsing()
                return
            }
            openPinSet?.pins.append(value)
            pending = nil
        case "pin-set":
            frames[frames.count - 1].pinSet = openPinSet
            openPinSet = nil
        case "domain-config":
            let frame = frames.removeLast()
            guard !frame.domains.isEmpty else { return fail(parser, "a <domain-config> without a <domain>") }
            // Android: a nested domain-config inherits what it does not set from its parent.
            guard let set = frame.pinSet ?? frames.reversed().lazy.compactMap(\.pinSet).first else { return }
            guard !set.pins.isEmpty else { return fail(parser, "a <pin-set> without a <pin>") }
            for domain in frame.domains {
                do {
                    try PinPolicyImport.checkDomain(domain.name, includesSubdomains: domain.includesSubdomains, location: "line \(domain.line)")
                } catch {
                    self.error = error
                    parser.abortParsing()
                    return
                }
                policies.append(PinPolicy(domain: domain.name, includesSubdomains: domain.includesSubdomains,
                                          pins: set.pins.map(PinIdentity.anyKey), expiration: set.expiration))
            }
        default:
            break
        }
    }

    private static func date(_ text: String) -> Date? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
              let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
              (1...12).contains(month), (1...31).contains(day) else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
        let components = DateComponents(year: year, month: month, day: day)
        guard let date = calendar.date(from: components),
              calendar.component(.day, from: date) == day else { return nil }   // refuses 2024-02-31
        return date
    }
}
