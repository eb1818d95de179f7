import { useState } from 'react'

export default function App() {
  const [count, setCount] = useState(0)
  return (
    <main className="app">
      <h1>Hello</h1>
      <p>Edit <code>src/App.tsx</code> and save.</p>
      <button onClick={() => setCount((n) => n + 1)}>Clicked {count} times</button>
    </main>
  )
}
