package apply

import (
	"context"
	"sync"
)

// appLocks is a lock per app id, held while a result of the app is applied.
// Locks of apps nobody holds or waits for are dropped.
type appLocks struct {
	mu    sync.Mutex
	byApp map[string]*appLock
}

// appLock is one app's lock: a token in a channel of one, so a waiter can
// give up when its context ends.
type appLock struct {
	token chan struct{}
	users int // holding or waiting
}

// lock takes app's lock, waiting for it until ctx ends, and returns the
// func that releases it.
func (l *appLocks) lock(ctx context.Context, app string) (func(), error) {
	l.mu.Lock()
	if l.byApp == nil {
		l.byApp = map[string]*appLock{}
	}
	k := l.byApp[app]
	if k == nil {
		k = &appLock{token: make(chan struct{}, 1)}
		l.byApp[app] = k
	}
	k.users++
	l.mu.Unlock()
	select {
	case k.token <- struct{}{}:
		return func() {
			<-k.token
			l.leave(app, k)
		}, nil
	case <-ctx.Done():
		l.leave(app, k)
		return nil, ctx.Err()
	}
}

// leave drops k, app's lock, once nobody holds or waits for it.
func (l *appLocks) leave(app string, k *appLock) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k.users--
	if k.users == 0 {
		delete(l.byApp, app)
	}
}
