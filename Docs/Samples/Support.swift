// Names the samples of several guides share, as the guides write them.

import DispatchStore

typealias Counter = GettingStarted.Counter
typealias CounterAction = GettingStarted.CounterAction
typealias CounterReducer = GettingStarted.CounterReducer
