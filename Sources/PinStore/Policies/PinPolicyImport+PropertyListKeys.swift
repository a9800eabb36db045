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
        // XMLParser traps on some input that is not UTF-8 and on some processing instructions
        // (see the Android importer); such a file is left to the property list reader, whose
        // parser is not libxml2.
        guard PinPolicyImport.lineOfInvalidUTF8(in: data) == nil,
              PinPolicyImport.lineOfProcessingInstruction(in: data) == nil else { return }
        let scan = DuplicateKeyScan()
        let parser = XMLParser(data: data)
        parser.delegate = scan
        parser.shouldProcessNamespaces = false
        parser.shouldResolveExternalEntities = false
        _ = parser.parse()
        if let duplicate = scan.duplicate {
            throw PinPolicyImportError(location: "line \(duplicate.line)",
                                       reason: "the key \(String(reflecting: duplicate.key)) appears twice in one dictionary "
                                           + "(one of them would be dropped)")
        }
    }
}

extension PinPolicyImport {
    /// The line of the first processing instruction (`<?target ...?>`) in `data` other than an
    /// XML declaration at its very start; nil when there is none. FoundationXML (Swift 6.3.1 on
    /// Linux) crashes on a processing instruction without data (`strlen(NULL)` in
    /// `_NSXMLParserProcessingInstruction`, found by the fuzz targets), so such input never
    /// reaches XMLParser. Neither Android configs nor plists use them. Found in comments too:
    /// refusing those is cheaper than parsing XML to tell them apart.
    static func lineOfProcessingInstruction(in data: Data) -> Int? {
        let bytes = [UInt8](data)
        var start = 0
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { start = 3 }   // a UTF-8 byte order mark
        let declaration = Array("<?xml".utf8)
        let whitespace: Set<UInt8> = [UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\r"), UInt8(ascii: "\n")]
        var line = 1
        var index = start
        while index + 1 < bytes.count {
            if bytes[index] == UInt8(ascii: "\n") {
                line += 1
            } else if bytes[index] == UInt8(ascii: "<"), bytes[index + 1] == UInt8(ascii: "?") {
                let isDeclaration = index == start && bytes[index...].starts(with: declaration)
                    && index + declaration.count < bytes.count
                    && whitespace.contains(bytes[index + declaration.count])
                if !isDeclaration { return line }
            }
            index += 1
        }
        return nil
    }

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
