document.getElementById('greet').addEventListener('click', () => {
  document.getElementById('message').textContent = 'Hello!'
})
