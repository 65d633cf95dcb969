package analysis

// Ported from utils/evaluate/evaluate.go @ argo-rollouts 9f8d111d8f8e: the same expr
// environment (result, asInt, asFloat, isNaN, isInf, isNil, default) and the same rules for
// combining successCondition and failureCondition. EvalTime (rangeQuery only) is left out.

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/file"
)

// evaluateResult is Argo's EvaluateResult: the phase of one measurement whose value is result.
func evaluateResult(result any, m Metric) (Phase, error) {
	successCondition := false
	failCondition := false
	var err error

	if m.SuccessCondition != "" {
		successCondition, err = evalCondition(result, m.SuccessCondition)
		if err != nil {
			return PhaseError, formatEvalError(err, "successCondition", m.SuccessCondition, result)
		}
	}
	if m.FailureCondition != "" {
		failCondition, err = evalCondition(result, m.FailureCondition)
		if err != nil {
			return PhaseError, formatEvalError(err, "failureCondition", m.FailureCondition, result)
		}
	}

	switch {
	case m.SuccessCondition == "" && m.FailureCondition == "":
		// No condition: Successful unless the query failed.
		return PhaseSuccessful, nil
	case m.SuccessCondition != "" && m.FailureCondition == "":
		// Without a failure condition, not meeting the success condition is a failure.
		failCondition = !successCondition
	case m.SuccessCondition == "" && m.FailureCondition != "":
		// Without a success condition, not meeting the failure condition is a success.
		successCondition = !failCondition
	}

	if failCondition {
		return PhaseFailed, nil
	}
	if !successCondition {
		return PhaseInconclusive, nil
	}
	return PhaseSuccessful, nil
}

// formatEvalError names the condition, and says so when the provider returned no data.
func formatEvalError(err error, conditionType, expression string, result any) error {
	if isNilOrEmpty(result) {
		return fmt.Errorf("could not evaluate %s \"%s\": metric result is nil or empty: no data returned from the metric provider", conditionType, expression)
	}
	return fmt.Errorf("could not evaluate %s \"%s\": %w", conditionType, expression, err)
}

func isNilOrEmpty(result any) bool {
	if isNil(result) {
		return true
	}
	v := reflect.ValueOf(result)
	switch v.Kind() {
	case reflect.Slice, reflect.Array:
		return v.Len() == 0
	}
	return false
}

// evalCondition evaluates condition with resultValue as `result`.
func evalCondition(resultValue any, condition string) (bool, error) {
	env := map[string]any{
		"result":  valueFromPointer(resultValue),
		"asInt":   asInt,
		"asFloat": asFloat,
		"isNaN":   math.IsNaN,
		"isInf":   isInf,
		"isNil":   isNilFunc(resultValue),
		"default": defaultFunc(resultValue),
	}

	unwrapFileErr := func(e error) error {
		var fileErr *file.Error
		if errors.As(e, &fileErr) {
			return errors.New(fileErr.Message)
		}
		return e
	}

	program, err := expr.Compile(condition, expr.Env(env))
	if err != nil {
		return false, unwrapFileErr(err)
	}
	output, err := expr.Run(program, env)
	if err != nil {
		return false, unwrapFileErr(err)
	}
	switch val := output.(type) {
	case bool:
		return val, nil
	default:
		return false, fmt.Errorf("expected bool, but got %T", val)
	}
}

func isInf(f float64) bool {
	return math.IsInf(f, 0)
}

// asInt panics on what it cannot convert; expr turns the panic into an evaluation error.
func asInt(in any) int64 {
	switch i := in.(type) {
	case float64:
		return int64(i)
	case float32:
		return int64(i)
	case int64:
		return i
	case int32:
		return int64(i)
	case int16:
		return int64(i)
	case int8:
		return int64(i)
	case int:
		return int64(i)
	case uint64:
		return int64(i)
	case uint32:
		return int64(i)
	case uint16:
		return int64(i)
	case uint8:
		return int64(i)
	case uint:
		return int64(i)
	case string:
		inAsInt, err := strconv.ParseInt(i, 10, 64)
		if err == nil {
			return inAsInt
		}
		panic(err)
	}
	panic(fmt.Sprintf("asInt() not supported on %v %v", reflect.TypeOf(in), in))
}

func asFloat(in any) float64 {
	switch i := in.(type) {
	case float64:
		return i
	case float32:
		return float64(i)
	case int64:
		return float64(i)
	case int32:
		return float64(i)
	case int16:
		return float64(i)
	case int8:
		return float64(i)
	case int:
		return float64(i)
	case uint64:
		return float64(i)
	case uint32:
		return float64(i)
	case uint16:
		return float64(i)
	case uint8:
		return float64(i)
	case uint:
		return float64(i)
	case string:
		inAsFloat, err := strconv.ParseFloat(i, 64)
		if err == nil {
			return inAsFloat
		}
		panic(err)
	}
	panic(fmt.Sprintf("asFloat() not supported on %v %v", reflect.TypeOf(in), in))
}

// defaultFunc ignores its first argument and looks at the measured value, as Argo's does.
func defaultFunc(resultValue any) func(any, any) any {
	return func(_ any, defaultValue any) any {
		if isNil(resultValue) {
			return defaultValue
		}
		return valueFromPointer(resultValue)
	}
}

func isNilFunc(resultValue any) func(any) bool {
	return func(_ any) bool {
		return isNil(resultValue)
	}
}

// isNil is Argo's, less reflect.Array: IsNil panics on an array (Prometheus gives none).
func isNil(in any) bool {
	if in == nil {
		return true
	}
	switch reflect.TypeOf(in).Kind() {
	case reflect.Ptr, reflect.Map, reflect.Chan, reflect.Slice:
		return reflect.ValueOf(in).IsNil()
	}
	return false
}

// valueFromPointer dereferences a non-nil pointer; nil values become untyped nil.
func valueFromPointer(in any) any {
	if isNil(in) {
		return nil
	}
	if reflect.TypeOf(in).Kind() != reflect.Ptr {
		return in
	}
	return reflect.ValueOf(in).Elem().Interface()
}
