import DispatchStore
import Foundation

/// A coding path as a chain, built only when someone asks for it.
final class PayloadPath {
    let parent: PayloadPath?
    let key: any CodingKey

    init(parent: PayloadPath?, key: any CodingKey) {
        self.parent = parent
        self.key = key
    }

    static func keys(of path: PayloadPath?) -> [any CodingKey] {
        var keys: [any CodingKey] = []
        var node = path
        while let current = node {
            keys.append(current.key)
            node = current.parent
        }
        return keys.reversed()
    }

    /// The key of an array's element in a coding path: `Index 3`.
    struct IndexKey: CodingKey {
        let intValue: Int?
        var stringValue: String { "Index \(intValue ?? 0)" }

        init(intValue: Int) {
            self.intValue = intValue
        }

        init?(stringValue: String) {
            nil
        }
    }
}
