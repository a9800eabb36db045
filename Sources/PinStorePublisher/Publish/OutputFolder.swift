import Foundation
import PinStore
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The folder a CDN or static server serves: the list, the key documents and the CT section,
/// each replaced atomically (``PersistentListFile/writeAtomically(_:to:permissions:)``: temporary
/// file, fsync, rename), readable by all (0644) since a web server reads them. The list goes
/// last and only after ``ListAcceptance/checkPublishable`` accepted its exact bytes, so on any
/// failure (disk full, folder not writable) the last good list stays what is served.
package struct OutputFolder: Sendable {
    package let url: URL
    package let listFileName: String

    /// The names beside the list.
    package static let keyDocumentsName = "keys.json"
    package static let certificateTransparencyName = "ct-section.json"

    package init(url: URL, listFileName: String) {
        self.url = url
        self.listFileName = listFileName
    }

    package var listURL: URL { url.appendingPathComponent(listFileName) }

    /// The list served now; nil when there is none.
    package func currentList() -> Data? {
        try? Data(contentsOf: listURL)
    }

    /// Writes the companions, then the list.
    package func publish(list: Data, keyDocuments: Data?, certificateTransparency: Data?) throws(PublisherError) {
        if !FileManager.default.fileExists(atPath: url.path) {
            do {
                try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
            } catch {
                throw PublisherError(.outputNotWritable, "The output folder \(url.path) cannot be created: \(error.localizedDescription)")
            }
        }
        do {
            if let keyDocuments {
                try PersistentListFile.writeAtomically(keyDocuments, to: url.appendingPathComponent(Self.keyDocumentsName), permissions: 0o644)
            }
            if let certificateTransparency {
                try PersistentListFile.writeAtomically(certificateTransparency, to: url.appendingPathComponent(Self.certificateTransparencyName), permissions: 0o644)
            }
            try PersistentListFile.writeAtomically(list, to: listURL, permissions: 0o644)
        } catch {
            throw PublisherError(.outputNotWritable, "The output folder \(url.path) could not be written, so the list served stays the last good one: \(error.reason)")
        }
    }
}
