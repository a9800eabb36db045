import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

extension PinPolicyImport {
    /// Refuses an XML property list in which one dictionary has the same key twice.
    /// `PropertyListSerialization` keeps one of the two values without a word, so a domain
    /// written twice would lose one entry's pins. Binary plists (`bplist`) are not scanned:
    /// they are written by tools, not by hand. Anything the scan cannot parse is left to
    /// `PropertyListSerialization`, which reports it.
    static func checkUniqueKeys(inXMLPropertyList data: Data) throws(PinPolicyImportError) {
        guard !data.starts(with: Data("bplist".utf8)) else { return }
        // XMLParser traps on some input that is not UTF-8 (see the Android importer); such a
        // file is left to PropertyListSerialization, whose parser is not libxml2.
        guard PinPolicyImport.lineOfInvalidUTF8(in: data) == nil else { return }
        let scan = DuplicateKeyScan()
        let parser = XMLParser(data: data)
        parser.delegate = scan
        parser.shouldProcessNamespaces = false
        parser.shouldResolveExternalEntities = false
        _ = parser.parse()
        if let duplicate = scan.duplicate {
            throw PinPolicyImportError(location: "line \(duplicate.line)",
                                       reason: "the key \(String(reflecting: duplicate.key)) appears twice in one dictionary (one of them would be dropped)")
        }
    }
}

extension PinPolicyImport {
    /// The line of the first byte sequence in `data` that is not UTF-8; nil when all of it is.
    static func lineOfInvalidUTF8(in data: Data) -> Int? {
        var parser = Unicode.UTF8.ForwardParser()
        var bytes = data.makeIterator()
        var line = 1
        while true {
            switch parser.parseScalar(from: &bytes) {
            case .valid(let encoded):
                if encoded.count == 1, encoded.first == UInt8(ascii: "\n") { line += 1 }
            case .emptyInput:
                return nil
            case .error:
                return line
            }
        }
    }
}

/// XMLParser's delegate for ``PinPolicyImport/checkUniqueKeys(inXMLPropertyList:)``: one set of
/// keys per open `<dict>`. Used on one thread, for one parse.
private final class DuplicateKeyScan: NSObject, XMLParserDelegate {
    var duplicate: (key: String, line: Int)?
    /// The open elements; for a `dict`, the keys it has so far.
    private var open: [(name: String, keys: Set<String>)] = []
    private var text = ""

    func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                attributes: [String: String] = [:]) {
        open.append((name, []))
        text = ""
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        if open.last?.name == "key" { text += string }
    }

    func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
        guard !open.isEmpty else { return }
        open.removeLast()
        guard name == "key", duplicate == nil, let last = open.indices.last, open[last].name == "dict" else { return }
        if open[last].keys.insert(text).inserted == false {
            duplicate = (text, parser.lineNumber)
            parser.abortParsing()
        }
    }
}
