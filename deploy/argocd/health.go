// Package argocd runs stsdiag's Argo CD resource health check for apps/StatefulSet
// (deploy/argocd/health.lua) the way Argo CD does, for tests.
package argocd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// ScriptPath is health.lua relative to the repository root.
const ScriptPath = "deploy/argocd/health.lua"

// LoadScript reads health.lua from the repository whose root is root.
func LoadScript(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, ScriptPath))
	return string(b), err
}

// Health is what a health script returns.
type Health struct {
	Status  string
	Message string
}

// statuses Argo CD accepts from a health script (anything else becomes Unknown).
var statuses = map[string]bool{"Healthy": true, "Progressing": true, "Degraded": true, "Suspended": true, "Missing": true, "Unknown": true}

// Run evaluates a health script on an object (an unstructured object's content) like Argo CD's
// util/lua VM: gopher-lua with only the package, base and table libraries, the object as the
// global obj (numbers as Lua numbers), a one-second limit, and the returned table's status and
// message.
func Run(script string, obj map[string]any) (Health, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for name, open := range map[string]lua.LGFunction{lua.LoadLibName: lua.OpenPackage, lua.BaseLibName: lua.OpenBase, lua.TabLibName: lua.OpenTable} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(open), NRet: 0, Protect: true}, lua.LString(name)); err != nil {
			return Health{}, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", toLua(l, obj))
	if err := l.DoString(script); err != nil {
		return Health{}, err
	}
	table, ok := l.Get(-1).(*lua.LTable)
	if !ok {
		return Health{}, fmt.Errorf("expect table output from Lua script, not %s", l.Get(-1).Type())
	}
	h := Health{Status: lua.LVAsString(table.RawGetString("status")), Message: lua.LVAsString(table.RawGetString("message"))}
	if !statuses[h.Status] {
		return Health{Status: "Unknown", Message: "Lua returned an invalid health status"}, nil
	}
	return h, nil
}

func toLua(l *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case map[string]any:
		t := l.NewTable()
		for k, e := range v {
			t.RawSetString(k, toLua(l, e))
		}
		return t
	case []any:
		t := l.NewTable()
		for _, e := range v {
			t.Append(toLua(l, e))
		}
		return t
	case string:
		return lua.LString(v)
	case bool:
		return lua.LBool(v)
	case int64:
		return lua.LNumber(v)
	case int:
		return lua.LNumber(v)
	case int32:
		return lua.LNumber(v)
	case float64:
		return lua.LNumber(v)
	}
	return lua.LNil
}
