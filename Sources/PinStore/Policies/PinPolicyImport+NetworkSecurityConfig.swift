import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

extension PinPolicyImport {
    /// The pin sets of an Android `network_security_config.xml`: every `domain` of a
    /// `domain-config` becomes a policy with that config's `pin-set` (or the nearest enclosing
    /// config's, as Android inherits it, wherever in the parent the `pin-set` is written),
    /// `includeSubdomains` as ``PinPolicy/includesSubdomains``, each `pin digest="SHA-256"` as
    /// ``PinIdentity/anyKey(spkiSHA256Base64:)`` (Android matches a pin against every certificate
    /// of the chain), and `expiration="yyyy-MM-dd"` as the start of that day in UTC. Domains
    /// without a pin set (their own or an enclosing config's) are not pinned and are left out.
    /// Trust-anchor settings (`trust-anchors`, `overridePins`, `debug-overrides`) are not
    /// imported: PinStore's anchors are configured on the adapters, and nothing may override a pin.
    ///
    /// The import yields every pin the file declares or fails: a file that is not well-formed
    /// (mismatched tags, cut off before `</network-security-config>`), that has a DOCTYPE, an
    /// element or attribute outside Android's schema (a typo such as `<pinset>` or
    /// `includeSubdomain` would hide a pin or a subdomain), text where none belongs, or a
    /// structure Android's parser refuses (a domain declared twice anywhere in the file,
    /// whatever its `includeSubdomains`; two `base-config`s, two `debug-overrides`, two
    /// `pin-set`s or `trust-anchors` in one entry; a `domain-config` without a `domain`; a pin
    /// digest other than SHA-256; `certificates` without a known `src`) is refused with the
    /// line of the problem. Android skips unknown elements and attributes and accepts an empty
    /// `pin-set`; PinStore refuses them, since either hides a pin the author meant to declare. Attributes of the `xmlns` and `tools` prefixes (Android Studio's lint
    /// annotations) are allowed anywhere.
    ///
    /// ```swift
    /// let xml = try Data(contentsOf: URL(fileURLWithPath: "app/src/main/res/xml/network_security_config.xml"))
    /// let policies = try PinPolicyImport.networkSecurityConfig(xml)
    /// ```
    public static func networkSecurityConfig(_ data: Data) throws(PinPolicyImportError) -> [PinPolicy] {
        try NetworkSecurityConfigDocument(parsing: data).policies()
    }
}

/// What a `network_security_config.xml` declares about pins, read completely: parsing records
/// every `domain-config` with its parent, and inheritance is resolved only once the whole file
/// has been read, so the order of a parent's `pin-set` and its nested configs does not matter.
struct NetworkSecurityConfigDocument {
    struct Pin {
        var digest: String
        var line: Int
    }

    struct PinSet {
        var pins: [Pin] = []
        var expiration: Date?
        var line: Int
    }

    struct Domain {
        var name: String
        var includesSubdomains: Bool
        var line: Int
    }

    struct DomainConfig {
        /// The index of the enclosing `domain-config` in ``configs``.
        var parent: Int?
        var domains: [Domain] = []
        var pinSet: PinSet?
        var line: Int
    }

    /// Every `domain-config`, in the order their start tags appear.
    var configs: [DomainConfig] = []

    init(parsing data: Data) throws(PinPolicyImportError) {
        // FoundationXML traps (a force unwrap in `_NSXMLParserStartElementNs`, Swift 6.3.1 on
        // Linux) on an element name that is not UTF-8, which libxml2 passes on after reporting
        // the error; the fuzz target found it. Android's resource files are UTF-8: anything
        // else is refused before the parser sees it.
        if let line = PinPolicyImport.lineOfInvalidUTF8(in: data) {
            throw PinPolicyImportError(location: "line \(line)", reason: "not UTF-8 (network security configs are UTF-8 files)")
        }
        if let line = PinPolicyImport.lineOfProcessingInstruction(in: data) {
            throw PinPolicyImportError(location: "line \(line)",
                                       reason: "a processing instruction (<?...?>) other than the XML declaration")
        }
        // Entities come only from a DTD; Android's parser reads none, so a file with one is not
        // a configuration Android would read the same way (and entities can multiply content).
        if let range = data.firstRange(of: Data("<!DOCTYPE".utf8)) {
            let line = data[data.startIndex..<range.lowerBound].reduce(1) { $1 == UInt8(ascii: "\n") ? $0 + 1 : $0 }
            throw PinPolicyImportError(location: "line \(line)",
                                       reason: "a DOCTYPE: network security configs have none (entities could hide or multiply pins)")
        }
        let reader = NetworkSecurityConfigReader()
        let parser = XMLParser(data: data)
        parser.delegate = reader
        parser.shouldProcessNamespaces = false
        parser.shouldResolveExternalEntities = false
        let parsed = parser.parse()
        // A structural error of ours first (it names what is wrong more precisely), then the
        // parser's. On Linux `parse()` may return true after a fatal error, so its result is
        // not trusted alone: the recorded error and the end of the root element are checked too.
        if let error = reader.error { throw error }
        if let fatal = reader.parseError {
            throw PinPolicyImportError(location: "line \(fatal.line)", reason: "not well-formed XML (\(fatal.description))")
        }
        if !parsed || parser.parserError != nil {
            throw PinPolicyImportError(location: "line \(parser.lineNumber)",
                                       reason: "not well-formed XML (\(parser.parserError?.localizedDescription ?? "parse error"))")
        }
        guard reader.sawRoot else {
            throw PinPolicyImportError(location: "line 1", reason: "the root element is not <network-security-config>")
        }
        guard reader.rootClosed else {
            throw PinPolicyImportError(location: "line \(parser.lineNumber)",
                                       reason: "the file ends before </network-security-config> (truncated?)")
        }
        configs = reader.configs
    }

    /// One policy per domain of a config that has a pin set (its own or inherited).
    func policies() throws(PinPolicyImportError) -> [PinPolicy] {
        var seen: [String: Int] = [:]
        var policies: [PinPolicy] = []
        for config in configs {
            guard !config.domains.isEmpty else {
                throw PinPolicyImportError(location: "line \(config.line)", reason: "a <domain-config> without a <domain>")
            }
            if let set = config.pinSet, set.pins.isEmpty {
                throw PinPolicyImportError(location: "line \(set.line)", reason: "a <pin-set> without a <pin>")
            }
            for domain in config.domains {
                let key = domain.name.lowercased()
                if let first = seen[key] {
                    throw PinPolicyImportError(location: "line \(domain.line)",
                                               reason: "the domain \(domain.name) is already declared at line \(first) "
                                                   + "(Android refuses duplicates)")
                }
                seen[key] = domain.line
                try PinPolicyImport.checkDomain(domain.name, includesSubdomains: domain.includesSubdomains, location: "line \(domain.line)")
            }
            // Android: a nested domain-config inherits what it does not set from its parent.
            guard let set = inheritedPinSet(of: config) else { continue }
            for domain in config.domains {
                policies.append(PinPolicy(domain: domain.name, includesSubdomains: domain.includesSubdomains,
                                          pins: set.pins.map { .anyKey(spkiSHA256Base64: $0.digest) }, expiration: set.expiration))
            }
        }
        return policies
    }

    /// The config's own pin set, or the nearest enclosing config's.
    private func inheritedPinSet(of config: DomainConfig) -> PinSet? {
        var current: DomainConfig? = config
        while let here = current {
            if let set = here.pinSet { return set }
            current = here.parent.map { configs[$0] }
        }
        return nil
    }
}

/// XMLParser's delegate for ``NetworkSecurityConfigDocument``: checks each element against
/// Android's schema as it starts and records what is about pins. Used on one thread, for one parse.
private final class NetworkSecurityConfigReader: NSObject, XMLParserDelegate {
    /// The elements each element may contain (Android's `network-security-config` schema).
    static let children: [String: Set<String>] = [
        "network-security-config": ["base-config", "domain-config", "debug-overrides"],
        // `certificateTransparency`: Android 16's per-entry CT switch (not in debug-overrides).
        "base-config": ["trust-anchors", "certificateTransparency"],
        "domain-config": ["domain", "trust-anchors", "pin-set", "domain-config", "certificateTransparency"],
        "pin-set": ["pin"],
        "trust-anchors": ["certificates"],
        "debug-overrides": ["trust-anchors"],
        "domain": [],
        "pin": [],
        "certificates": [],
        "certificateTransparency": [],
    ]

    /// The attributes each element may carry (besides `xmlns` and `tools:` ones).
    static let attributes: [String: Set<String>] = [
        "network-security-config": [],
        "base-config": ["cleartextTrafficPermitted", "hstsEnforced"],
        "domain-config": ["cleartextTrafficPermitted", "hstsEnforced"],
        "domain": ["includeSubdomains"],
        "pin-set": ["expiration"],
        "pin": ["digest"],
        "trust-anchors": [],
        "certificates": ["src", "overridePins"],
        "debug-overrides": [],
        "certificateTransparency": ["enabled"],
    ]

    var configs: [NetworkSecurityConfigDocument.DomainConfig] = []
    var error: PinPolicyImportError?
    var parseError: (line: Int, description: String)?
    var sawRoot = false
    var rootClosed = false
    /// The open elements, outermost first.
    private var elements: [String] = []
    /// The indices in ``configs`` of the open `domain-config` elements.
    private var openConfigs: [Int] = []
    private var text = ""
    private var includesSubdomains = false
    /// Android's one-of rules (`XmlConfigSource`): one `base-config`, one `debug-overrides`, and
    /// one `trust-anchors` per config entry (for each open entry, whether it has one).
    private var sawBaseConfig = false
    private var sawDebugOverrides = false
    private var entryHasTrustAnchors: [Bool] = []

    private func fail(_ parser: XMLParser, _ reason: String) {
        guard error == nil else { return }
        error = PinPolicyImportError(location: "line \(parser.lineNumber)", reason: reason)
        parser.abortParsing()
    }

    func parser(_ parser: XMLParser, parseErrorOccurred parseError: any Error) {
        guard self.parseError == nil else { return }
        self.parseError = (parser.lineNumber, parseError.localizedDescription)
    }

    func parser(_ parser: XMLParser, validationErrorOccurred validationError: any Error) {
        self.parser(parser, parseErrorOccurred: validationError)
    }

    func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                attributes: [String: String] = [:]) {
        guard error == nil else { return }
        if let parent = elements.last {
            guard Self.children[parent]?.contains(name) == true else {
                return fail(parser, "<\(name)> is not allowed in <\(parent)> (Android's schema; a typo here could hide a pin)")
            }
        } else {
            guard !sawRoot else { return fail(parser, "a second root element <\(name)>") }
            guard name == "network-security-config" else {
                return fail(parser, "the root element is <\(name)>, not <network-security-config>")
            }
            sawRoot = true
        }
        let allowed = Self.attributes[name] ?? []
        for attribute in attributes.keys.sorted() where !allowed.contains(attribute) {
            guard attribute == "xmlns" || attribute.hasPrefix("xmlns:") || attribute.hasPrefix("tools:") else {
                return fail(parser, "<\(name)> has an unknown attribute \(attribute) (a typo here could drop a pin or a subdomain)")
            }
        }
        elements.append(name)
        text = ""
        switch name {
        case "base-config":
            guard !sawBaseConfig else { return fail(parser, "a second <base-config> (Android allows one)") }
            sawBaseConfig = true
            entryHasTrustAnchors.append(false)
        case "debug-overrides":
            guard !sawDebugOverrides else { return fail(parser, "a second <debug-overrides> (Android allows one)") }
            sawDebugOverrides = true
            entryHasTrustAnchors.append(false)
        case "trust-anchors":
            guard entryHasTrustAnchors.last == false else {
                return fail(parser, "a second <trust-anchors> in one <\(elements.dropLast().last ?? "")> (Android allows one)")
            }
            entryHasTrustAnchors[entryHasTrustAnchors.count - 1] = true
        case "certificates":
            guard let source = attributes["src"] else { return fail(parser, "<certificates> without src (Android requires it)") }
            guard ["system", "user", "wfa"].contains(source) || source.hasPrefix("@") else {
                return fail(parser, "<certificates src=\"\(source)\">: Android knows system, user, wfa or a @resource")
            }
        case "domain-config":
            configs.append(.init(parent: openConfigs.last, line: parser.lineNumber))
            openConfigs.append(configs.count - 1)
            entryHasTrustAnchors.append(false)
        case "domain":
            let flag = attributes["includeSubdomains"] ?? "false"
            guard flag == "true" || flag == "false" else { return fail(parser, "includeSubdomains=\"\(flag)\" is neither true nor false") }
            includesSubdomains = flag == "true"
        case "pin-set":
            guard let index = openConfigs.last else { return fail(parser, "<pin-set> outside a <domain-config>") }
            guard configs[index].pinSet == nil else { return fail(parser, "a second <pin-set> in one <domain-config>") }
            var set = NetworkSecurityConfigDocument.PinSet(line: parser.lineNumber)
            if let expiration = attributes["expiration"] {
                guard let date = Self.date(expiration) else { return fail(parser, "expiration=\"\(expiration)\" is not a date yyyy-MM-dd") }
                set.expiration = date
            }
            configs[index].pinSet = set
        case "pin":
            // Android compares the algorithm name case-insensitively.
            guard attributes["digest"]?.uppercased() == "SHA-256" else {
                return fail(parser, "pin digest=\"\(attributes["digest"] ?? "")\": only SHA-256 is supported (as on Android)")
            }
        default:
            break   // base-config, trust-anchors, certificates, debug-overrides: not about pins
        }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        append(string, parser)
    }

    func parser(_ parser: XMLParser, foundCDATA CDATABlock: Data) {
        guard let string = String(data: CDATABlock, encoding: .utf8) else { return fail(parser, "a CDATA section that is not UTF-8") }
        append(string, parser)
    }

    private func append(_ string: String, _ parser: XMLParser) {
        guard error == nil else { return }
        if elements.last == "domain" || elements.last == "pin" {
            text += string
        } else if !string.allSatisfy(\.isWhitespace) {
            fail(parser, "text outside <domain> and <pin> (\(String(reflecting: String(string.prefix(40)))))")
        }
    }

    func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
        guard error == nil else { return }
        guard elements.last == name else { return fail(parser, "</\(name)> does not close <\(elements.last ?? "")>") }
        elements.removeLast()
        let value = text.trimmingCharacters(in: .whitespacesAndNewlines)
        text = ""
        switch name {
        case "network-security-config":
            rootClosed = true
        case "domain":
            guard !value.isEmpty else { return fail(parser, "an empty <domain>") }
            guard let index = openConfigs.last else { return fail(parser, "<domain> outside a <domain-config>") }
            configs[index].domains.append(.init(name: value, includesSubdomains: includesSubdomains, line: parser.lineNumber))
        case "pin":
            do {
                try PinPolicyImport.checkDigest(value, location: "line \(parser.lineNumber)")
            } catch {
                self.error = error
                parser.abortParsing()
                return
            }
            guard let index = openConfigs.last else { return fail(parser, "<pin> outside a <domain-config>") }
            configs[index].pinSet?.pins.append(.init(digest: value, line: parser.lineNumber))
        case "domain-config":
            openConfigs.removeLast()
            _ = entryHasTrustAnchors.popLast()
        case "base-config", "debug-overrides":
            _ = entryHasTrustAnchors.popLast()
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
